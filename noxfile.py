"""Sessions: tests (asyncio and trio), lint, typecheck, conformance. `nox` runs the default ones."""

from __future__ import annotations

from pathlib import Path

import nox

nox.options.default_venv_backend = "venv"
nox.options.sessions = ["lint", "typecheck", "conformance", "tests"]
nox.options.reuse_existing_virtualenvs = False

PYPROJECT = nox.project.load_toml("pyproject.toml")


@nox.session
def tests(session: nox.Session) -> None:
    session.install("-e", ".[server]", *nox.project.dependency_groups(PYPROJECT, "test"))
    session.run("pytest", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    session.install(*nox.project.dependency_groups(PYPROJECT, "lint"))
    session.run("ruff", "check", "src", "tests", "examples", "noxfile.py")
    session.run("ruff", "format", "--check", "src", "tests", "examples", "noxfile.py")


@nox.session
def typecheck(session: nox.Session) -> None:
    session.install("-e", ".", *nox.project.dependency_groups(PYPROJECT, "typecheck"))
    session.run("mypy")


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


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmarks against the official SDK (not a default session): `nox -s bench -- --quick`."""
    session.install("-e", ".[server]", "mcp==2.3.0")
    session.run("python", "-m", "bench", *session.posargs)
