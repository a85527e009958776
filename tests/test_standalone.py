"""The repository stands alone: no test, bench, nox or CI source reads outside it.

A fresh clone in an empty directory must pass the suite. The scanner below resolves, per
file, every path expression it can evaluate statically (``Path(__file__)`` with
``.parent``, ``.parents[n]``, ``.resolve()`` and ``/ "literal"`` joins, the same with
``os.path``, and names bound to such expressions), and fails on one that lands outside
the repository. It also fails on any parent-directory segment in a string literal and on
absolute literals handed to ``Path``/``open``, which it cannot place. The scanner is tested
against sources that escape, so a silent scanner cannot pass.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

import pytest

ROOT = Path(__file__).resolve().parents[1]
UP = "." * 2  # spelled so that this file holds no parent-directory literal itself
ALLOWED_ABSOLUTE = frozenset({"/dev/null"})


def scanned_files() -> list[Path]:
    """Every source the suite, the benchmarks, nox and CI run, minus vendored data."""
    files = [ROOT / "noxfile.py", ROOT / "pyproject.toml"]
    files += sorted(p for p in (ROOT / ".ci").rglob("*") if p.is_file())
    for folder in ("tests", "bench"):
        files += sorted(
            p
            for p in (ROOT / folder).rglob("*")
            if p.is_file()
            and p.suffix in {".py", ".txt", ".toml", ".cfg", ".ini", ".sh", ""}
            and "spec" not in p.relative_to(ROOT / folder).parts[:1]
            and "__pycache__" not in p.parts
        )
    assert len(files) > 20, files  # the scan found the sources: an empty scan proves nothing
    return files


# -- the scanner -----------------------------------------------------------------------


class _Escapes(ast.NodeVisitor):
    """Collect the path expressions of one Python file that leave the repository."""

    def __init__(self, relative: PurePosixPath) -> None:
        self.file = relative  # the file, relative to the repository root
        self.bound: dict[str, list[str] | None] = {}
        self.found: list[str] = []

    # a location is the list of parts below the repository root; None if unknown
    def place(self, node: ast.AST) -> list[str] | None:
        if isinstance(node, ast.Name):
            if node.id == "__file__":
                return list(self.file.parts)
            return self.bound.get(node.id)
        if isinstance(node, ast.Call):
            name = ast.unparse(node.func)
            if name in {"Path", "pathlib.Path", "PurePath", "PurePosixPath"} and node.args:
                return self.place(node.args[0])
            if name in {"os.path.dirname", "dirname"} and node.args:
                return self.up(self.place(node.args[0]), 1, node)
            if name in {"os.path.abspath", "os.path.realpath", "abspath", "realpath"}:
                return self.place(node.args[0]) if node.args else None
            if name in {"os.path.join", "join"} and node.args:
                return self.join(self.place(node.args[0]), node.args[1:], node)
            if isinstance(node.func, ast.Attribute) and node.func.attr in {"resolve", "absolute"}:
                return self.place(node.func.value)
            return None
        if isinstance(node, ast.Attribute) and node.attr == "parent":
            return self.up(self.place(node.value), 1, node)
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "parents"
            and isinstance(node.slice, ast.Constant)
            and isinstance(node.slice.value, int)
        ):
            return self.up(self.place(node.value.value), node.slice.value + 1, node)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            return self.join(self.place(node.left), [node.right], node)
        return None

    def up(self, where: list[str] | None, steps: int, node: ast.AST) -> list[str] | None:
        if where is None:
            return None
        if steps > len(where):
            self.report(node)
            return None
        return where[: len(where) - steps]

    def join(
        self, where: list[str] | None, parts: list[ast.expr], node: ast.AST
    ) -> list[str] | None:
        if where is None:
            return None
        where = list(where)
        for part in parts:
            if not (isinstance(part, ast.Constant) and isinstance(part.value, str)):
                return None
            for segment in part.value.split("/"):
                if segment == UP:
                    if not where:
                        self.report(node)
                        return None
                    where.pop()
                elif segment not in {"", "."}:
                    where.append(segment)
        return where

    def report(self, node: ast.AST) -> None:
        where = f"{self.file}:{getattr(node, 'lineno', '?')}: {ast.unparse(node)}"
        if where not in self.found:  # nested expressions are placed more than once
            self.found.append(where)

    def visit_Assign(self, node: ast.Assign) -> None:
        where = self.place(node.value)
        for target in node.targets:
            if isinstance(target, ast.Name):
                self.bound[target.id] = where
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        name = ast.unparse(node.func)
        first = node.args[0] if node.args else None
        if (
            name in {"Path", "pathlib.Path", "open", "io.open"}
            and isinstance(first, ast.Constant)
            and isinstance(first.value, str)
            and first.value.startswith(("/", "~"))
            and first.value not in ALLOWED_ABSOLUTE
        ):
            self.report(node)
        self.generic_visit(node)

    def generic_visit(self, node: ast.AST) -> None:
        if isinstance(node, (ast.Attribute, ast.Subscript, ast.BinOp, ast.Call)):
            self.place(node)  # reports an escape as a side effect
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and UP in re.split(r"[/\\\s\"'=:]", node.value)
        ):
            self.report(node)
        super().generic_visit(node)


_SCRIPT_DIR = re.compile(
    r"\$\(\s*dirname\s+\"?\$(?:0|\{BASH_SOURCE\[0\]\})\"?\s*\)((?:/[^\s\"';)]*)?)"
)
_UP_SEGMENT = re.compile(r"(?:^|[/\s\"'=])" + re.escape(UP) + r"(?=$|[/\s\"';)])")


def _text_escapes(relative: PurePosixPath, text: str) -> Iterator[str]:
    """Parent-directory segments in a script or config: allowed only from the script's
    own directory, and only as far as the repository root."""
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("#") and relative.suffix != "":
            continue  # a comment in a config file is not a path
        allowed = 0
        for match in _SCRIPT_DIR.finditer(line):
            where = list(relative.parent.parts)
            for segment in match.group(1).split("/"):
                if segment == UP:
                    if not where:
                        yield f"{relative}:{number}: {line.strip()}"
                        break
                    where.pop()
                    allowed += 1
        if len(_UP_SEGMENT.findall(line)) > allowed:
            yield f"{relative}:{number}: {line.strip()}"


def escapes(relative: PurePosixPath, text: str) -> list[str]:
    """Every place in one source that points outside the repository."""
    if relative.suffix == ".py":
        visitor = _Escapes(relative)
        visitor.visit(ast.parse(text))
        return visitor.found
    return list(_text_escapes(relative, text))


# -- the tests -------------------------------------------------------------------------


def test_no_test_bench_nox_or_ci_source_reads_outside_the_repository() -> None:
    this = Path(__file__).resolve()
    found = []
    for path in scanned_files():
        if path == this:
            continue  # holds the counter-examples below as data
        relative = PurePosixPath(path.relative_to(ROOT).as_posix())
        found += escapes(relative, path.read_text(encoding="utf-8"))
    assert found == []


def test_this_file_is_clean_apart_from_its_counter_examples() -> None:
    text = Path(__file__).read_text(encoding="utf-8")
    kept = text.split("# -- the tests", 1)[0]  # the scanner itself must not escape
    assert escapes(PurePosixPath("tests/test_standalone.py"), kept) == []


@pytest.mark.parametrize(
    "source",
    [
        'SPEC = Path(__file__).resolve().parents[2].parent / "shared" / "spec"',
        "OUT = Path(__file__).resolve().parents[3]",
        "OUT = Path(__file__).parent.parent.parent.parent",
        'OUT = Path(__file__).parents[2].parent / "x"',
        f'HERE = Path(__file__).parent\nSPEC = HERE / "{UP}" / "{UP}" / "shared"',
        f'SPEC = Path(__file__).parent / "{UP}/{UP}/x"',
        f'X = Path(__file__).parent / "{UP}" / "interop"',  # inside, yet no literal parent
        "D = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))",
        f'D = os.path.join(os.path.dirname(__file__), "{UP}", "{UP}")',
        f'open("{UP}/shared/spec/schema.json")',
        'Path("/work/shared/spec")',
        'Path("~/spec")',
        f'subprocess.run(["ls", "{UP}"])',
    ],
)
def test_the_scanner_catches_python_that_leaves_the_repository(source: str) -> None:
    assert escapes(PurePosixPath("tests/helpers/x.py"), source) != []


@pytest.mark.parametrize(
    "source",
    [
        'EXAMPLES = Path(__file__).resolve().parents[2] / "examples"',
        'SPEC = Path(__file__).resolve().parent.parent / "spec"',
        "ROOT = Path(__file__).resolve().parents[2]",
        "ROOT = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))",
        'open("/dev/null")',
        'HOME = "/home/somebody"  # data, not a path the test reads',
    ],
)
def test_the_scanner_accepts_python_that_stays_inside(source: str) -> None:
    assert escapes(PurePosixPath("tests/helpers/x.py"), source) == []


def test_the_scanner_checks_scripts_from_their_own_directory() -> None:
    inside = f'cd "$(dirname "$0")/{UP}"\nnox\n'
    outside = f'cd "$(dirname "$0")/{UP}/{UP}"\nls shared\n'
    plain = f"cp -r {UP}/shared/spec tests/\n"
    assert escapes(PurePosixPath(".ci/run"), inside) == []
    assert escapes(PurePosixPath(".ci/run"), outside) != []
    assert escapes(PurePosixPath(".ci/run"), plain) != []


def test_a_parametrization_without_data_is_an_error(pytestconfig: pytest.Config) -> None:
    # a data-driven test whose data went missing must fail collection, never skip quietly
    assert pytestconfig.getini("empty_parameter_set_mark") == "fail_at_collect"
