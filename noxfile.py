"""Sessions: lint, typecheck, install, conformance, docs, tests, interop, units_lowest,
units_newest. `nox` runs all of these.

`tests` is everything but the interop tests (fast, in-process and local subprocesses);
`interop` runs against the official MCP Python SDK in real subprocesses. Both run on
asyncio and trio. `docs` builds the site with `--strict` (`nox -s docs -- serve` serves
it); `tests` then checks the built site in headless Chromium. `bench` is on demand only.

`install` installs the built wheel the way a user does (a fresh venv, the package and one
extra, nothing else) on every Python the package claims and runs what a user runs;
`units_lowest` runs a fast unit subset with every dependency at its floor on the lowest
Python, `units_newest` with everything upgraded on the newest.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import nox

nox.options.default_venv_backend = "venv"
nox.options.sessions = [
    "lint",
    "typecheck",
    "install",
    "conformance",
    "docs",
    "tests",
    "interop",
    "units_lowest",
    "units_newest",
]
nox.options.reuse_existing_virtualenvs = False

PYPROJECT = nox.project.load_toml("pyproject.toml")


# Spread the tests over workers only where there are cores to spare: on 2 cores, two
# workers measured slower than one (the suite is already subprocess- and CPU-bound).
WORKERS = ["-n", "auto"] if (os.cpu_count() or 1) >= 4 else []


def _pytest(session: nox.Session, marker: str, *groups: str) -> None:
    deps = nox.project.dependency_groups(PYPROJECT, "test", *groups)
    session.install("--upgrade", "-e", ".[server]", *deps)
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
    session.install("-e", ".[server]", "mcp==2.3.0", "fastmcp-tasks==4.1.4")
    session.run("python", "-m", "bench", *session.posargs)


# -- what a user installs -------------------------------------------------------------------

PYTHONS = ("3.10", "3.11", "3.12", "3.13")  # requires-python >= 3.10: every minor we claim


def _interpreter(session: nox.Session, version: str) -> str:
    """A working ``python3.X``: on PATH, or under pyenv's versions (its shims may refuse)."""
    home = os.environ.get("PYENV_ROOT", str(Path.home() / ".pyenv"))
    candidates = [shutil.which(f"python{version}")]
    candidates += sorted(glob.glob(f"{home}/versions/{version}.*/bin/python{version}"))
    for candidate in candidates:
        if candidate is None:
            continue
        probe = subprocess.run(
            [candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            check=False,
        )
        if probe.returncode == 0 and probe.stdout.strip() == version:
            return candidate
    session.error(
        f"Python {version} is not installed (the package claims it): pyenv install {version}"
    )
    raise AssertionError  # unreachable: session.error raises


def _venv(session: nox.Session, python: str, where: Path) -> str:
    """A fresh venv made by ``python``; its interpreter's path."""
    session.run(python, "-m", "venv", "--clear", str(where), external=True, silent=True)
    return str(where / "bin" / "python")


def _pip(session: nox.Session, python: str, *args: str) -> None:
    session.run(python, "-m", "pip", "install", "-q", *args, external=True, silent=True)


@nox.session
def install(session: nox.Session) -> None:
    """The wheel, as a user installs it, on 3.10-3.13: the demo, the README, the CLI, HTTP.

    Builds the sdist and the wheel (the wheel from the sdist, so a file the sdist forgets
    fails here), then per Python: a venv with ``mrtr[server]`` and nothing else runs
    tests/install/smoke.py's server checks, and a venv with bare ``mrtr`` its core checks
    (the client works; each extra's absence is an error that names it). Both run from a
    directory outside the checkout.
    """
    session.install("build")
    work = Path(tempfile.mkdtemp(prefix="mrtr-install-"))
    dist = work / "dist"
    session.run("python", "-m", "build", "--outdir", str(dist), silent=True)
    (wheel,) = dist.glob("mrtr-*.whl")
    (sdist,) = dist.glob("mrtr-*.tar.gz")
    session.log(f"built {sdist.name} and {wheel.name}")
    smoke = str(Path("tests/install/smoke.py").resolve())
    checkout = str(Path.cwd())
    for version in session.posargs or PYTHONS:
        python = _interpreter(session, version)
        for kind, requirement in (("server", f"{wheel}[server]"), ("core", str(wheel))):
            venv = _venv(session, python, work / f"{kind}-{version}")
            _pip(session, venv, requirement)
            where = work / f"run-{kind}-{version}"
            where.mkdir()
            with session.chdir(where):
                session.run(venv, smoke, kind, checkout, external=True)
    shutil.rmtree(work, ignore_errors=True)


# A fast unit subset (no subprocess-heavy CLI, docs or interop tests): what the dependency
# legs run. The lowest leg cannot hold the official SDK (it needs newer floors than ours),
# so the few tests that build its models are left out there.
UNIT_SUBSET = [
    "tests/flow",
    "tests/session",
    "tests/types",
    "tests/wire",
    "tests/paused",
    "tests/server",
    "tests/client/test_tracing.py",
    "tests/auth/test_keyring.py",
    "tests/test_dependencies.py",
]
NEEDS_THE_OFFICIAL_SDK = [
    "tests/session/test_session.py::test_leg_params_dump_any_pydantic_model_and_never_change_the_call_params",
    # the fleet's chaos run drives a quarter of its calls with the official client
    "tests/server/tasks/test_fleet.py::test_a_chaos_run_on_the_fleet_loses_nothing_and_runs_no_effect_twice",
    "tests/server/tasks/test_fleet.py::test_the_official_client_asks_again_for_a_lost_answer_and_the_effect_runs_once",
]
ALL_EXTRAS = ".[server,auth,keyring,redis,otel,trio,lambda]"


def _floors() -> list[str]:
    """``name==X`` for every ``name>=X`` the package declares (core and every extra)."""
    project = PYPROJECT["project"]
    specs = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        specs += extra
    pins = {}
    for spec in specs:
        match = re.match(r"([A-Za-z0-9_.\-]+)(\[[^\]]*\])?\s*>=\s*([0-9][^,;\s]*)", spec)
        if match:
            pins[match.group(1).lower()] = f"{match.group(1)}=={match.group(3)}"
    # the tests' OpenTelemetry SDK pins its API exactly: the same release, or pip backtracks
    api = pins["opentelemetry-api"].split("==")[1]
    pins["opentelemetry-sdk"] = f"opentelemetry-sdk=={api}"
    return sorted(pins.values())


# the real peers of the interop tests: they bring floors of their own, above ours
PEERS = ("mcp", "fastmcp")


def _unit_tools() -> list[str]:
    groups = nox.project.dependency_groups(PYPROJECT, "test")
    return [d for d in groups if not d.startswith(PEERS)]


@nox.session
def units_lowest(session: nox.Session) -> None:
    """The unit subset on the lowest Python with every dependency at its declared floor.

    A floor in pyproject.toml is a promise: this leg keeps it. Where it fails, raise the
    floor to what passes.
    """
    python = _venv(session, _interpreter(session, PYTHONS[0]), Path(session.cache_dir) / "lowest")
    floors = Path(session.cache_dir) / "floors.txt"
    floors.write_text("\n".join(_floors()) + "\n", encoding="utf-8")
    session.log("floors: " + ", ".join(_floors()))
    _pip(session, python, "-c", str(floors), "-e", ALL_EXTRAS, *_unit_tools())
    deselect = [f"--deselect={test}" for test in NEEDS_THE_OFFICIAL_SDK]
    session.run(python, "-m", "pytest", "-q", "-m", "not interop", *deselect, *UNIT_SUBSET,
                *session.posargs, external=True)  # fmt: skip


@nox.session
def units_newest(session: nox.Session) -> None:
    """The unit subset on the newest Python with everything upgraded to its newest release."""
    python = _venv(session, _interpreter(session, PYTHONS[-1]), Path(session.cache_dir) / "newest")
    groups = nox.project.dependency_groups(PYPROJECT, "test")
    _pip(session, python, "--upgrade", "--upgrade-strategy", "eager", "-e", ALL_EXTRAS, *groups)
    session.run(python, "-m", "pytest", "-q", "-m", "not interop", *UNIT_SUBSET, *session.posargs,
                external=True)  # fmt: skip
