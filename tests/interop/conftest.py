"""Where the interop tests run: the official SDK's HTTP peer and the transport matrix.

A test that asks for ``target`` (or ``route``) runs over HTTP on both backends and over
stdio on asyncio; marked ``stdio_trio`` it also runs over stdio on trio. A subprocess per
stdio client is what makes interop slow, and the backend axis is covered in-process by
the transport tests, so trio over stdio is kept to a smoke set. Every other test here
runs on both backends, as in the rest of the suite.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.helpers.official import http_peer, stdio_params

ROUTES = [("http", "asyncio"), ("http", "trio"), ("stdio", "asyncio")]
STDIO_TRIO = ("stdio", "trio")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "route" in metafunc.fixturenames:
        routes = (
            [*ROUTES, STDIO_TRIO]
            if metafunc.definition.get_closest_marker("stdio_trio")
            else ROUTES
        )
        metafunc.parametrize("route", routes, ids=["-".join(r) for r in routes])
    elif "anyio_backend" in metafunc.fixturenames:
        metafunc.parametrize("anyio_backend", ["asyncio", "trio"], indirect=True)


@pytest.fixture
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """The backend of the route, or (for a test without one) the parametrized backend."""
    if "route" in request.fixturenames:
        route: tuple[str, str] = request.getfixturevalue("route")
        return route[1]
    backend: str = request.param
    return backend


@pytest.fixture(scope="session")
def official_http() -> Iterator[str]:
    """Base URL of every official server over HTTP (``f"{base}/{name}/mcp"``)."""
    with http_peer() as base:
        yield base


@pytest.fixture
def target(route: tuple[str, str], request: pytest.FixtureRequest) -> Callable[[str], Any]:
    """``target(name)`` gives a Client target for the official server ``name`` on the route."""
    if route[0] == "http":
        base: str = request.getfixturevalue("official_http")
        return lambda name: f"{base}/{name}/mcp"
    return stdio_params
