"""Package faces whose names are plain imports, loaded on first use.

A package that re-exports names from heavy submodules (torch, pandas, the harness) writes them as
ordinary imports under ``if TYPE_CHECKING:`` -- what type checkers, editors and import-linter
read -- and takes its module ``__getattr__`` and ``__dir__`` (PEP 562) from :func:`lazy_exports`.
At run time that block does not run; the first read of one of its names reads the block from the
package's source and imports the one submodule that defines it, so importing the package costs
only its eager imports. The names are written once, in the imports.

Example (``instructeval_tasks/sweep/__init__.py``)::

    from typing import TYPE_CHECKING

    from ..lazy import lazy_exports

    if TYPE_CHECKING:
        from .runner import SweepReport, run_sweep

    __getattr__, __dir__ = lazy_exports(__name__)

This module imports only the standard library's ``sys`` and ``importlib`` (the ``.pth`` hook of the
``instructeval-hf`` backend imports its package at every interpreter start).
"""

from __future__ import annotations

import importlib
import sys
from typing import Any, Callable


def type_checking_imports(source: str) -> dict[str, tuple[str, str]]:
    """``{name: (module, attribute)}`` of the ``from M import a as name`` statements inside the
    top-level ``if TYPE_CHECKING:`` blocks of a module's ``source`` (``M`` as written: ``.runner``).

        >>> type_checking_imports("if TYPE_CHECKING:\\n    from .model import Fit, Model as M\\n")
        {'Fit': ('.model', 'Fit'), 'M': ('.model', 'Model')}
    """
    import ast

    found: dict[str, tuple[str, str]] = {}
    for node in ast.parse(source).body:
        test = node.test if isinstance(node, ast.If) else None
        if not (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING"
                or isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"):
            continue
        for statement in node.body:
            if isinstance(statement, ast.ImportFrom):
                module = "." * statement.level + (statement.module or "")
                for alias in statement.names:
                    found[alias.asname or alias.name] = (module, alias.name)
    return found


def lazy_exports(package: str) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module ``__getattr__`` and ``__dir__`` of ``package`` (its ``__name__``): a name of its
    ``if TYPE_CHECKING:`` imports (:func:`type_checking_imports`) imports its module, relative to
    ``package``, and returns the attribute; any other name is an ``AttributeError``."""
    table: dict[str, tuple[str, str]] = {}

    def exports() -> dict[str, tuple[str, str]]:
        if not table:
            path = sys.modules[package].__file__
            with open(path, encoding="utf-8") as handle:
                table.update(type_checking_imports(handle.read()))
        return table

    def __getattr__(name: str) -> Any:
        found = exports().get(name) if not name.startswith("__") else None
        if found is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, attribute = found
        return getattr(importlib.import_module(module, package), attribute)

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(exports()))

    return __getattr__, __dir__
