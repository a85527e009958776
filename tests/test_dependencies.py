"""Every third-party module that `src/mrtr` imports is declared, in the right extra.

A test environment holds more than a user's (trio, mcp, redis...), so an undeclared
import passes every other test and fails only in a clean install: `sniffio` did, once
anyio stopped bringing it. This test reads the imports from the source and the
declarations from pyproject.toml, so it needs nothing installed but the test group.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the lowest Python
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "mrtr"

# The distribution each third-party top-level module comes from, where the names differ.
DISTRIBUTION = {
    "httpx_sse": "httpx-sse",
    "typing_extensions": "typing-extensions",
    "opentelemetry": "opentelemetry-api",
}

# Imported only on an object of that package that the caller already holds, so the
# package is there by construction: not a dependency of mrtr.
BROUGHT_BY_THE_CALLER = {
    "mcp": "Client(official_server) adapts a server object of the official SDK",
    "mcp_types": "the same adapter (the official SDK's wire types)",
    "pydantic_core": "pydantic's own core, pinned by pydantic itself",
}

# Optional modules imported without a guard of their own because the package that
# imports them checks for its extra when it is imported (and names the extra).
GATED = {"cryptography": "mrtr.server"}

# OpenTelemetry is used only once the application has imported it (a provider exists).
ACTIVATED_BY_THE_APPLICATION = {"opentelemetry"}

# Modules that may import an optional package at the top because they are themselves
# imported only lazily, after their importer checked for the extra and named it.
IMPORTED_AFTER_A_CHECK = {
    "mrtr.server._http._drain": "uvicorn",  # only by run_http, once uvicorn imported
}


@dataclass(frozen=True)
class Import:
    module: str  # top-level name
    path: Path
    line: int
    lazy: bool  # inside a function
    type_only: bool  # under `if TYPE_CHECKING:`
    guard_messages: tuple[str, ...]  # the strings raised by an `except ImportError` around it


def _requirement_name(spec: str) -> str:
    match = re.match(r"[A-Za-z0-9_.\-]+", spec)
    assert match is not None, spec
    return match.group(0).lower().replace("_", "-")


def declared() -> tuple[set[str], dict[str, set[str]]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    core = {_requirement_name(spec) for spec in project["dependencies"]}
    extras = {
        extra: {_requirement_name(spec) for spec in specs}
        for extra, specs in project["optional-dependencies"].items()
    }
    return core, extras


def _strings(node: ast.AST) -> Iterator[str]:
    for child in ast.walk(node):
        if isinstance(child, ast.Constant) and isinstance(child.value, str):
            yield child.value


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    names = (
        {n.id for n in ast.walk(handler.type) if isinstance(n, ast.Name)} if handler.type else set()
    )
    return bool(names & {"ImportError", "ModuleNotFoundError"})


def imports_in(path: Path) -> Iterator[Import]:
    tree = ast.parse(path.read_text(encoding="utf-8"))

    def visit(
        node: ast.AST, lazy: bool, type_only: bool, guards: tuple[str, ...]
    ) -> Iterator[Import]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                if isinstance(child, ast.ImportFrom):
                    names = [child.module] if child.level == 0 and child.module else []
                else:
                    names = [alias.name for alias in child.names]
                for name in names:
                    yield Import(name.split(".")[0], path, child.lineno, lazy, type_only, guards)
                continue
            child_lazy = lazy or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            child_type_only = type_only or (
                isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test)
            )
            if isinstance(child, ast.Try):
                messages = tuple(
                    text
                    for handler in child.handlers
                    if _catches_import_error(handler)
                    for text in _strings(handler)
                )
                for part in child.body:
                    yield from visit_one(part, child_lazy, child_type_only, guards + messages)
                for rest in (*child.handlers, *child.orelse, *child.finalbody):
                    yield from visit_one(rest, child_lazy, child_type_only, guards)
                continue
            yield from visit(child, child_lazy, child_type_only, guards)

    def visit_one(
        node: ast.AST, lazy: bool, type_only: bool, guards: tuple[str, ...]
    ) -> Iterator[Import]:
        holder = ast.Module(body=[node], type_ignores=[])  # type: ignore[list-item]
        yield from visit(holder, lazy, type_only, guards)

    yield from visit(tree, False, False, ())


def third_party_imports() -> list[Import]:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        for imp in imports_in(path):
            if imp.module in sys.stdlib_module_names or imp.module in ("mrtr", "__future__"):
                continue
            found.append(imp)
    return found


def _where(imp: Import) -> str:
    return f"{imp.path.relative_to(ROOT)}:{imp.line} imports {imp.module}"


def test_every_third_party_import_is_declared() -> None:
    core, extras = declared()
    everything = core.union(*extras.values())
    undeclared = sorted(
        _where(imp)
        for imp in third_party_imports()
        if imp.module not in BROUGHT_BY_THE_CALLER
        and DISTRIBUTION.get(imp.module, imp.module).lower() not in everything
    )
    assert undeclared == [], "imported but declared nowhere in pyproject.toml"


def test_an_optional_import_is_lazy_and_names_its_extra() -> None:
    core, extras = declared()
    problems = []
    for imp in third_party_imports():
        dist = DISTRIBUTION.get(imp.module, imp.module).lower()
        if dist in core or imp.module in BROUGHT_BY_THE_CALLER or imp.type_only:
            continue
        owners = sorted(extra for extra, names in extras.items() if dist in names)
        module = ".".join(imp.path.relative_to(SRC.parent).with_suffix("").parts)
        if not imp.lazy and IMPORTED_AFTER_A_CHECK.get(module) != imp.module:
            problems.append(f"{_where(imp)} at import time (extra {owners}): import it lazily")
            continue
        if not imp.lazy:
            continue
        if imp.module in ACTIVATED_BY_THE_APPLICATION:
            continue
        package = ".".join(imp.path.relative_to(SRC.parent).with_suffix("").parts)
        if imp.module in GATED and package.startswith(GATED[imp.module] + "."):
            continue
        named = any(f"mrtr[{extra}]" in text for text in imp.guard_messages for extra in owners)
        if not named:
            problems.append(
                f"{_where(imp)} without an ImportError that names mrtr[{'|'.join(owners)}]"
            )
    assert problems == []


def test_the_checks_see_an_undeclared_import(tmp_path: Path) -> None:
    # the check itself can fail: the import that broke clean installs is found as one
    source = "def f():\n    import sniffio\n"
    tree_imports = list(_imports_of_source(source, tmp_path / "m.py"))
    assert [(i.module, i.lazy, i.guard_messages) for i in tree_imports] == [("sniffio", True, ())]
    core, extras = declared()
    assert "sniffio" not in core.union(*extras.values())


def _imports_of_source(source: str, path: Path) -> Iterator[Import]:
    path.write_text(source, encoding="utf-8")
    try:
        yield from list(imports_in(path))
    finally:
        path.unlink()


def test_a_guard_is_read_from_its_except_clause(tmp_path: Path) -> None:
    source = textwrap.dedent(
        """
        def f():
            try:
                import uvicorn
            except ImportError as exc:
                raise ImportError("needs uvicorn: pip install 'mrtr[server]'") from exc
        """
    )
    (found,) = _imports_of_source(source, tmp_path / "m.py")
    assert found.lazy and any("mrtr[server]" in text for text in found.guard_messages)


def test_the_server_package_names_its_extra_when_cryptography_is_missing() -> None:
    probe = textwrap.dedent(
        """
        import sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name == "cryptography" or name.startswith("cryptography."):
                    raise ModuleNotFoundError(f"No module named {name!r}")
                return None
        sys.meta_path.insert(0, Block())
        import mrtr, mrtr.auth, mrtr.client  # the client side needs no extra
        try:
            import mrtr.server
        except ImportError as exc:
            print(exc)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    assert "pip install 'mrtr[server]'" in done.stdout, done.stdout + done.stderr


def test_a_module_imported_after_a_check_is_only_imported_lazily() -> None:
    eager = []
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:  # top-level statements only: a function body is lazy
            if isinstance(node, ast.ImportFrom) and node.module in IMPORTED_AFTER_A_CHECK:
                eager.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {node.module}")
    assert eager == []
