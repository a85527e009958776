"""MkDocs hooks: the reference pages drawn from the code, and the checks that fail the build.

A page asks for generated content with a marker on a line of its own:

- ``<!-- mrtr:reference MODULE -->``: one mkdocstrings block per name in ``MODULE.__all__``
  (the runtime list, so a name added to a package shows up without editing a page);
- ``<!-- mrtr:reference-links MODULE FROM -->``: a table of the names ``MODULE`` re-exports
  from ``FROM``, linked to ``FROM``'s page instead of documented twice;
- ``<!-- mrtr:errors-tree -->``: the exception tree, drawn once in ``mrtr/errors.py``;
- ``<!-- mrtr:cli -->``: ``mrtr --help`` and every command's ``--help``;
- ``<!-- mrtr:bench-charts -->``: bar charts drawn from a ``python -m bench`` output file.

Before anything is built, every public name of the referenced packages (and every public
method, property and nested class of a public class) must have a docstring: one without
fails the build, with the list. Unresolved cross-references fail through ``--strict``.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import os
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "docs" / "_hooks"))

import bench_charts  # noqa: E402  (beside this file)
from mkdocs.exceptions import PluginError  # noqa: E402

REFERENCED = (
    "mrtr",
    "mrtr.types",
    "mrtr.errors",
    "mrtr.server",
    "mrtr.auth",
    "mrtr.transports",
    "mrtr.cli",
)
MARKER = re.compile(r"^<!-- mrtr:(?P<what>[a-z-]+)(?P<args>(?: [\w./-]+)*) -->$", re.MULTILINE)


class DocsCheckError(PluginError):
    """A public name without a docstring, or a marker the hook cannot fill (aborts the build)."""


def on_pre_build(config: Any) -> None:
    """Fail before building when a public name has no docstring."""
    missing = undocumented()
    if missing:
        raise DocsCheckError(
            "public names without a docstring (add one, or make the name private):\n  "
            + "\n  ".join(missing)
        )


def undocumented(src: Path = ROOT / "src", modules: tuple[str, ...] = REFERENCED) -> list[str]:
    """The public names (and public class members) of ``modules`` that have no docstring.

    ``modules`` belong to one top-level package under ``src``; their public names are
    their runtime ``__all__``, their docstrings what griffe reads from the source.
    """
    import griffe

    top = modules[0].split(".")[0]
    package = griffe.load(
        top, search_paths=[str(src)], resolve_aliases=True, resolve_external=False
    )
    missing: list[str] = []
    for module in modules:
        for name in public_names(module):
            path = f"{module}.{name}"
            found = package[path.removeprefix(f"{top}.")]
            target = found.final_target if found.is_alias else found
            if not target.docstring:
                missing.append(path)
            if target.is_class:
                missing.extend(_undocumented_members(path, target))
    return missing


def _undocumented_members(path: str, cls: Any) -> list[str]:
    missing = []
    for name, member in cls.members.items():
        if name.startswith("_") or member.is_alias:
            continue
        callable_like = member.is_function or member.is_class or "property" in member.labels
        if callable_like and not member.docstring:
            missing.append(f"{path}.{name}")
    return missing


def public_names(module: str) -> list[str]:
    """The module's ``__all__``, as the running package defines it."""
    return list(importlib.import_module(module).__all__)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Fill the page's markers."""
    return MARKER.sub(lambda match: _fill(match["what"], match["args"].split(), page), markdown)


def _fill(what: str, args: list[str], page: Any) -> str:
    if what == "reference":
        return _reference(*args)
    if what == "reference-links":
        return _reference_links(*args)
    if what == "errors-tree":
        return _errors_tree()
    if what == "cli":
        return _cli_help()
    if what == "bench-charts":
        return bench_charts.render(ROOT / args[0])
    raise DocsCheckError(f"{page.file.src_path}: unknown marker mrtr:{what}")


def _defining_package(module: str, name: str) -> str:
    obj = getattr(importlib.import_module(module), name)
    return getattr(obj, "__module__", module) or module


def _reference(module: str, *skip_from: str) -> str:
    blocks = []
    for name in public_names(module):
        if skip_from and _defining_package(module, name).startswith(skip_from):
            continue
        blocks.append(f"::: {module}.{name}\n    options:\n      heading_level: 2\n")
    return "\n".join(blocks)


def _reference_links(module: str, source: str) -> str:
    rows = ["| name | what it means |", "|---|---|"]
    for name in public_names(module):
        if _defining_package(module, name).startswith(source) and name in public_names(source):
            doc = getattr(importlib.import_module(source), name).__doc__ or ""
            summary = doc.strip().split("\n\n")[0].replace("\n", " ").replace("|", "\\|")
            rows.append(f"| [`{name}`][{source}.{name}] | {summary} |")
    return "\n".join(rows)


def _errors_tree() -> str:
    import mrtr.errors

    doc = mrtr.errors.__doc__ or ""
    match = re.search(r"```\n(MRTRError.*?)```", doc, flags=re.DOTALL)
    if match is None:
        raise DocsCheckError("mrtr/errors.py no longer draws the exception tree")
    return f"```text\n{match[1]}```"


def _cli_help() -> str:
    from mrtr.cli._args import build_parser

    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "96"
    try:
        parser = build_parser("mrtr")
        parts = [f"## `mrtr`\n\n```text\n{_help_of(parser)}```\n"]
        for action in parser._subparsers._group_actions if parser._subparsers else ():
            for name, sub in (getattr(action, "choices", None) or {}).items():
                if sub.epilog == parser.epilog:
                    sub.epilog = None  # the targets and exit codes: shown once, above
                parts.append(f"## `mrtr {name}`\n\n```text\n{_help_of(sub)}```\n")
        return "\n".join(parts)
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old


def _help_of(parser: Any) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        parser.print_help()
    return out.getvalue()
