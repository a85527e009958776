"""Sessions: tests (asyncio and trio), lint, typecheck. `nox` runs the default ones."""

from __future__ import annotations

import nox

nox.options.default_venv_backend = "venv"
nox.options.sessions = ["lint", "typecheck", "tests"]
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
