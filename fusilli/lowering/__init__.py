"""Lowering: per-target rules (rules.py)."""
