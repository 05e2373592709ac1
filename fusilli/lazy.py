"""PEP 562 lazy attributes for package ``__init__`` modules.

``__getattr__, __dir__ = lazy_attributes(__name__, {"Graph": "fusilli.graph"})``
imports a public name's defining module on its first access, so importing the
package stays cheap (no ``iree.compiler`` until something needs it).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any


def lazy_attributes(package: str, table: dict[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module-level ``__getattr__`` and ``__dir__`` resolving ``table`` (name -> module)."""

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)  # later lookups skip __getattr__
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(table))

    return __getattr__, __dir__
