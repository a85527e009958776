"""Sessions: lint, typecheck, conformance, tests, interop. `nox` runs all of these.

`tests` is everything but the interop tests (fast, in-process and local subprocesses);
`interop` runs against the official MCP Python SDK in real subprocesses. Both run on
asyncio and trio. `bench` is on demand only.
"""

from __future__ import annotations

import os
from pathlib import Path

import nox

nox.options.default_venv_backend = "venv"
nox.options.sessions = ["lint", "typecheck", "conformance", "tests", "interop"]
nox.options.reuse_existing_virtualenvs = False

PYPROJECT = nox.project.load_toml("pyproject.toml")


# Spread the tests over workers only where there are cores to spare: on 2 cores, two
# workers measured slower than one (the suite is already subprocess- and CPU-bound).
WORKERS = ["-n", "auto"] if (os.cpu_count() or 1) >= 4 else []


def _pytest(session: nox.Session, marker: str) -> None:
    session.install("-e", ".[server]", *nox.project.dependency_groups(PYPROJECT, "test"))
    session.run("pytest", "-m", marker, *WORKERS, *session.posargs)


@nox.session
def tests(session: nox.Session) -> None:
    """Everything but interop: `nox -s tests -- tests/test_driver.py -x` narrows it."""
    _pytest(session, "not interop")


@nox.session
def interop(session: nox.Session) -> None:
    """Against the official SDK (mcp==2.3.0) as real peers: subprocesses and uvicorn."""
    _pytest(session, "interop")


@nox.session
def lint(session: nox.Session) -> None:
    session.install(*nox.project.dependency_groups(PYPROJECT, "lint"))
    session.run("ruff", "check", "src", "tests", "examples", "noxfile.py")
    session.run("ruff", "format", "--check", "src", "tests", "examples", "noxfile.py")


@nox.session
def typecheck(session: nox.Session) -> None:
    groups = nox.project.dependency_groups(PYPROJECT, "typecheck", "test")
    session.install("-e", ".[server]", *groups)
    session.run("mypy")  # src, strict (pyproject.toml)
    session.run("mypy", "--config-file", "tests/mypy.ini")  # tests, bench, noxfile: checked bodies


CONFORMANCE_SUITE = "@modelcontextprotocol/conformance@0.2.0-alpha.12"
CONFORMANCE_NODE = "node@24"  # the suite's CLI needs Node >= 22


@nox.session
def conformance(session: nox.Session) -> None:
    """The official MCP conformance suite, client mode, both eras (see tests/conformance/)."""
    session.install("-e", ".")
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


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmarks against the official SDK (not a default session): `nox -s bench -- --quick`."""
    session.install("-e", ".[server]", "mcp==2.3.0")
    session.run("python", "-m", "bench", *session.posargs)
