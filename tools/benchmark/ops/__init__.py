"""The op families ``fusilli-benchmark`` knows, discovered from this package.

Every module here is one family (one subcommand) and defines

    NAME               the subcommand ("conv")
    ALIASES            other spellings of it (MIOpen's "convfp16", "convbfp16"), may be empty
    HELP               one line for --help
    add_arguments(p)   its flags on an argparse parser
    build(args)        -> Problem, for the parsed flags (and the alias used, in args.subcommand)

so a new family is a new module, with no list to edit.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType


def _discover() -> dict[str, ModuleType]:
    families = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        families[module.NAME] = module
    return families


FAMILIES: dict[str, ModuleType] = _discover()
# Subcommand spelling (name or alias) -> family.
SUBCOMMANDS: dict[str, ModuleType] = {
    alias: module for module in FAMILIES.values() for alias in (module.NAME, *module.ALIASES)
}
