"""Sessions: lint, typecheck, conformance, docs, tests, interop. `nox` runs all of these.

`tests` is everything but the interop tests (fast, in-process and local subprocesses);
`interop` runs against the official MCP Python SDK in real subprocesses. Both run on
asyncio and trio. `docs` builds the site with `--strict` (`nox -s docs -- serve` serves
it); `tests` then checks the built site in headless Chromium. `bench` is on demand only.
"""

from __future__ import annotations

import os
from pathlib import Path

import nox

nox.options.default_venv_backend = "venv"
nox.options.sessions = ["lint", "typecheck", "conformance", "docs", "tests", "interop"]
nox.options.reuse_existing_virtualenvs = False

PYPROJECT = nox.project.load_toml("pyproject.toml")


# Spread the tests over workers only where there are cores to spare: on 2 cores, two
# workers measured slower than one (the suite is already subprocess- and CPU-bound).
WORKERS = ["-n", "auto"] if (os.cpu_count() or 1) >= 4 else []


def _pytest(session: nox.Session, marker: str, *groups: str) -> None:
    deps = nox.project.dependency_groups(PYPROJECT, "test", *groups)
    session.install("-e", ".[server]", *deps)
    session.run("pytest", "-m", marker, *WORKERS, *session.posargs)


@nox.session
def tests(session: nox.Session) -> None:
    """Everything but interop: `nox -s tests -- tests/flow/test_driver.py -x` narrows it.

    With the `docs` group: tests/docs/ builds the site and opens it in Chromium.
    """
    _pytest(session, "not interop and not old_mcp and not npm_everything", "docs")


@nox.session
def interop(session: nox.Session) -> None:
    """Against the official SDK (mcp==2.3.0) as real peers: subprocesses and uvicorn."""
    _pytest(session, "interop and not old_mcp and not npm_everything")


OLD_MCP = ["mcp==1.8.1", "pydantic<2.11"]  # 1.8.1 imports a pydantic internal 2.11 removed


@nox.session
def interop_old_mcp(session: nox.Session) -> None:
    """mode="auto" against a real server on mcp 1.8.1 (opt-in: it builds a second venv)."""
    old = Path(session.cache_dir) / "old-mcp-venv"
    if not (old / "bin" / "python").exists():
        session.run("python", "-m", "venv", str(old))
    session.run(str(old / "bin" / "python"), "-m", "pip", "install", "-q", *OLD_MCP, external=True)
    session.install("-e", ".[server]", *nox.project.dependency_groups(PYPROJECT, "test"))
    session.env["MRTR_OLD_MCP_PYTHON"] = str(old / "bin" / "python")
    session.run("pytest", "-m", "old_mcp", *session.posargs)


@nox.session
def docs(session: nox.Session) -> None:
    """The site: `mkdocs build --strict` into site/; `nox -s docs -- serve` serves it locally.

    Strict: a broken link, an unresolved cross-reference or any warning fails, and so does
    a public name without a docstring (docs/_hooks/mrtr_docs.py checks before building).
    """
    session.install("-e", ".[server]", *nox.project.dependency_groups(PYPROJECT, "docs"))
    session.env["NO_MKDOCS_2_WARNING"] = "1"
    if session.posargs[:1] == ["serve"]:
        session.run("mkdocs", "serve", "--strict", "-a", "127.0.0.1:8000", *session.posargs[1:])
    else:
        session.run("mkdocs", "build", "--strict", "--site-dir", "site", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    session.install(*nox.project.dependency_groups(PYPROJECT, "lint"))
    session.run("ruff", "check", "src", "tests", "examples", "docs/_hooks", "noxfile.py")
    session.run(
        "ruff", "format", "--check", "src", "tests", "examples", "docs/_hooks", "noxfile.py"
    )


@nox.session
def typecheck(session: nox.Session) -> None:
    groups = nox.project.dependency_groups(PYPROJECT, "typecheck", "test")
    session.install("-e", ".[server]", *groups)
    session.run("mypy")  # src, strict (pyproject.toml)
    session.run("mypy", "--config-file", "tests/mypy.ini")  # tests, bench, noxfile: checked bodies


EVERYTHING_SERVER = "@modelcontextprotocol/server-everything@2026.8.31"


@nox.session
def interop_everything(session: nox.Session) -> None:
    """Against the npm server-everything over stdio (opt-in: installs it with npm)."""
    prefix = Path(session.cache_dir) / "everything-npm"
    prefix.mkdir(parents=True, exist_ok=True)
    npm_args = ["--prefix", str(prefix), "--no-audit", "--no-fund", "--loglevel=error"]
    session.run("npm", "install", *npm_args, EVERYTHING_SERVER, external=True)
    session.install("-e", ".[server]", *nox.project.dependency_groups(PYPROJECT, "test"))
    package = prefix / "node_modules" / "@modelcontextprotocol" / "server-everything"
    session.env["MRTR_EVERYTHING_SERVER"] = str(package / "dist" / "index.js")
    session.run("pytest", "-m", "npm_everything", *session.posargs)


CONFORMANCE_SUITE = "@modelcontextprotocol/conformance@0.2.0-alpha.12"
CONFORMANCE_NODE = "node@24"  # the suite's CLI needs Node >= 22


@nox.session
def conformance(session: nox.Session) -> None:
    """The official MCP conformance suite in client and server mode, both eras.

    See tests/conformance/ (run.py drives the client, run_server.py the server).
    """
    session.install("-e", ".[server]")
    prefix = Path(session.cache_dir) / "conformance-npm"
    prefix.mkdir(parents=True, exist_ok=True)
    npm_args = ["--prefix", str(prefix), "--no-audit", "--no-fund", "--loglevel=error"]
    session.run("npm", "install", *npm_args, CONFORMANCE_NODE, CONFORMANCE_SUITE, external=True)
    client = Path("tests/conformance/client.py").resolve()
    session.run(
        "python",
        "tests/conformance/run.py",
        "--suite-bin",
        str(prefix / "node_modules" / ".bin"),
        "--client",
        f"{Path(session.bin) / 'python'} {client}",
        *session.posargs,
    )
    server = Path("tests/conformance/server.py").resolve()
    session.run(
        "python",
        "tests/conformance/run_server.py",
        "--suite-bin",
        str(prefix / "node_modules" / ".bin"),
        "--server",
        f"{Path(session.bin) / 'python'} {server}",
    )
    # the same scenarios against a server written with the high-level MCPServer
    high_level = Path("tests/conformance/mcpserver_server.py").resolve()
    session.run(
        "python",
        "tests/conformance/run_server.py",
        "--suite-bin",
        str(prefix / "node_modules" / ".bin"),
        "--server",
        f"{Path(session.bin) / 'python'} {high_level}",
        "--expected",
        "tests/conformance/expected-failures-mcpserver.txt",
    )


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmarks against the official SDK (not a default session): `nox -s bench -- --quick`."""
    session.install("-e", ".[server]", "mcp==2.3.0")
    session.run("python", "-m", "bench", *session.posargs)
