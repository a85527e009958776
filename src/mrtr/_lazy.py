"""The one lazy-import mechanism of mrtr's packages (PEP 562).

A package lists what it exports as one table, ``{module: names}``, and gets its
``__all__``, ``__getattr__`` and ``__dir__`` from `lazy_exports`: a name is imported
from its module on first access and then kept in the package's namespace, so
``import mrtr`` builds no pydantic model and imports neither httpx nor the server.
For type checkers, each package repeats its table as ``from module import name as
name`` under ``TYPE_CHECKING``; a test keeps the two in agreement.

A public class or function is defined in a private module and shown under the package
it is imported from (`publish`), so a traceback says ``mrtr.server.InvalidSignature``.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["export_order", "lazy_exports", "publish"]


def export_order(name: str) -> tuple[int, str]:
    """The sort key of every ``__all__`` (ruff's isort style): CONSTANTS, Classes, functions."""
    if name.isupper():
        return (0, name)
    return (1, name) if name[:1].isupper() else (2, name)


def lazy_exports(
    package: str, table: Mapping[str, Iterable[str]]
) -> tuple[tuple[str, ...], Callable[[str], Any], Callable[[], list[str]]]:
    """Build a package's ``__all__``, ``__getattr__`` and ``__dir__`` from `table`.

    Args:
        package: the package's ``__name__`` (it must be importing now).
        table: for each module, the names the package exports from it.

    Returns:
        ``__all__`` (sorted by `export_order`), ``__getattr__`` and ``__dir__``.

    Raises:
        ValueError: a name is listed under two modules.
    """
    where: dict[str, str] = {}
    for module, names in table.items():
        for name in names:
            if where.setdefault(name, module) != module:
                raise ValueError(f"{package}: {name!r} is exported from two modules")
    exported = tuple(sorted(where, key=export_order))
    namespace = sys.modules[package].__dict__

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exported))

    return exported, __getattr__, __dir__


def publish(package: str, *objects: Any) -> None:
    """Show public classes and functions under ``package``, where users import them from.

    Called at the end of the private module that defines them (not lazily by the
    package: an error raised inside mrtr must print its public name even when nobody
    imported it). ``package`` exports each name, so pickling still finds them; the
    annotations of a class are resolved when it is defined, before its module changes.
    """
    for obj in objects:
        obj.__module__ = package
