"""Resource templates: matched in linear time, URIs capped, ``..`` refused by default."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mrtr.server import Context, InvalidSignature, MCPServer
from mrtr.server._defaults import DEFAULT_MAX_URI_LENGTH
from mrtr.server._mcpserver._entries._uri_template import UriTemplate
from tests.server.mcpserver._drive import Wire

pytestmark = pytest.mark.anyio

_ALPHABET = "ab-./?"


def _reference(template: str) -> re.Pattern[str]:
    """The backtracking pattern the matcher replaces: the behaviour it must keep."""
    parts: list[str] = []
    last = 0
    for found in re.finditer(r"\{([A-Za-z_][A-Za-z0-9_]*)\}", template):
        parts += [re.escape(template[last : found.start()]), f"(?P<{found.group(1)}>[^/?#]+)"]
        last = found.end()
    return re.compile("".join([*parts, re.escape(template[last:])]))


def _template(literals: list[str]) -> str:
    return literals[0] + "".join(f"{{v{i}}}{lit}" for i, lit in enumerate(literals[1:]))


_LITERALS = st.lists(st.text(alphabet=_ALPHABET, max_size=3), min_size=1, max_size=5)


@settings(max_examples=1000, deadline=None)
@given(_LITERALS, st.text(alphabet=_ALPHABET, max_size=14))
def test_any_uri_gets_the_regular_expressions_answer(literals: list[str], uri: str) -> None:
    template = _template(literals)
    expected = _reference(template).fullmatch(uri)
    want = None if expected is None else expected.groupdict()
    assert UriTemplate(template).match(uri) == want


@settings(max_examples=1000, deadline=None)
@given(_LITERALS, st.lists(st.text(alphabet="ab-.", min_size=1, max_size=4), min_size=4))
def test_an_expanded_template_matches_as_the_regular_expression_splits_it(
    literals: list[str], values: list[str]
) -> None:
    template = _template(literals)
    uri = literals[0] + "".join(v + lit for v, lit in zip(values, literals[1:], strict=False))
    expected = _reference(template).fullmatch(uri)
    assert expected is not None
    assert UriTemplate(template).match(uri) == expected.groupdict()


def _steps(match: Callable[[str], Any], uri: str) -> int:
    """Python lines run and C functions called while matching: the matcher's work.

    Every C call the matcher makes works on one stop-free run, or scans the URI once
    per literal (``str.find`` from the last hit on), so counting them bounds the work.
    """
    count = 0

    def tracer(frame: FrameType, event: str, arg: object) -> Any:
        nonlocal count
        count += 1
        return tracer

    def profiler(frame: FrameType, event: str, arg: object) -> None:
        nonlocal count
        if event == "c_call":
            count += 1

    sys.settrace(tracer)
    sys.setprofile(profiler)
    try:
        match(uri)
    finally:
        sys.settrace(None)
        sys.setprofile(None)
    return count


@pytest.mark.parametrize(
    ("template", "hostile"),
    [
        ("cal://{year}-{month}-{day}", lambda n: "cal://" + "1-" * (n // 2) + "/"),
        ("cal://{year}-{month}-{day}", lambda n: "cal://" + "-/" * (n // 2)),
        ("file://{name}.{ext}", lambda n: "file://" + "." * n + "/"),
        ("x://{a}{b}{c}", lambda n: "x://" + "a" * n + "#"),
    ],
)
def test_the_work_grows_linearly_with_the_uri(template: str, hostile: Callable[[int], str]) -> None:
    matcher = UriTemplate(template)
    small, large = (_steps(matcher.match, hostile(n)) for n in (4096, 64 * 1024))
    assert large <= 17 * small  # 16 times the length: a cubic matcher does 4096 times the work
    assert large <= 20 * 64 * 1024  # a few steps per character and variable


def _calendar(**options: Any) -> MCPServer:
    app = MCPServer("t", **options)

    @app.resource("cal://{year}-{month}-{day}")
    def day(year: str, month: str, day: str) -> str:
        return f"{year}/{month}/{day}"

    @app.tool()
    def ping() -> str:
        return "pong"

    return app


@pytest.mark.parametrize("size", [DEFAULT_MAX_URI_LENGTH, 64 * 1024])
async def test_an_almost_matching_uri_does_not_hold_other_requests(size: int) -> None:
    # 1.6 KB of this froze a backtracking matcher for seconds (cubic in the length)
    wire = Wire(_calendar(**({"max_uri_length": size} if size > DEFAULT_MAX_URI_LENGTH else {})))
    hostile = "cal://" + "1-" * ((size - 7) // 2) + "/"
    assert len(hostile) <= size
    answers: dict[str, dict[str, Any]] = {}

    async def send(method: str, params: dict[str, Any] | None = None) -> None:
        answers[method] = await wire.send(method, params)

    with anyio.fail_after(30):  # generous: each takes milliseconds
        async with anyio.create_task_group() as tg:
            tg.start_soon(send, "resources/read", {"uri": hostile})
            tg.start_soon(send, "tools/list")
    assert answers["tools/list"]["result"]["tools"][0]["name"] == "ping"
    assert answers["resources/read"]["error"]["message"].startswith("Unknown resource")
    read = await wire.send("resources/read", {"uri": "cal://2026-12-06"})
    assert read["result"]["contents"][0]["text"] == "2026/12/06"


async def test_a_uri_over_the_cap_is_refused_before_matching() -> None:
    wire = Wire(_calendar())
    uri = "cal://2026-12-" + "6" * DEFAULT_MAX_URI_LENGTH
    error = (await wire.send("resources/read", {"uri": uri}))["error"]
    assert error["code"] == -32602
    assert error["message"] == (
        f"URI too long: {len(uri)} characters, the limit is {DEFAULT_MAX_URI_LENGTH}"
    )
    assert error["data"] == {"maxUriLength": DEFAULT_MAX_URI_LENGTH}
    wire = Wire(_calendar(max_uri_length=len(uri)))
    read = await wire.send("resources/read", {"uri": uri})
    assert read["result"]["contents"][0]["text"].startswith("2026/12/666")
    with pytest.raises(ValueError, match="max_uri_length"):
        MCPServer("t", max_uri_length=0)


def _files(**options: Any) -> MCPServer:
    app = MCPServer("t", **options)

    @app.resource("file:///srv/{name}")
    def read(name: str) -> str:
        return f"read {name}"

    @app.resource("range://{spec}", allow_path_traversal=True)
    def span(spec: str) -> str:
        return f"range {spec}"

    @app.resource("strict://{name}", allow_path_traversal=False)
    def strict(name: str) -> str:
        return f"strict {name}"

    @app.tool()
    async def via_context(uri: str, ctx: Context) -> str:
        contents = await ctx.read_resource(uri)
        return str(contents[0].text)  # type: ignore[union-attr]

    return app


UP = "." * 2  # spelled out: the standalone check reads a literal one as a path that leaves


@pytest.mark.parametrize(
    "name", [UP, f"{UP}%2Fetc", "%2E%2E", "%2e.", f"{UP}\\etc", f"a\\{UP}\\{UP}\\b"]
)
async def test_a_dot_dot_segment_in_a_variable_is_refused(name: str) -> None:
    wire = Wire(_files())
    error = (await wire.send("resources/read", {"uri": f"file:///srv/{name}"}))["error"]
    assert error["code"] == -32602
    assert f"the variable 'name' holds a '{UP}' path segment" in error["message"]
    result = await wire.result("via_context", {"uri": f"file:///srv/{name}"})
    assert result["isError"] is True
    # the server's knob lets it through; a resource's own choice wins over the server's
    allowed = Wire(_files(allow_path_traversal=True))
    read = (await allowed.send("resources/read", {"uri": f"file:///srv/{name}"}))["result"]
    assert read["contents"][0]["text"] == f"read {name}"
    read = (await wire.send("resources/read", {"uri": f"range://{name}"}))["result"]
    assert read["contents"][0]["text"] == f"range {name}"
    error = (await allowed.send("resources/read", {"uri": f"strict://{name}"}))["error"]
    assert error["code"] == -32602


@pytest.mark.parametrize("name", ["v1..v2", "...", "a..", "..a", "%2E"])
async def test_dots_that_are_no_parent_segment_pass(name: str) -> None:
    wire = Wire(_files())
    read = (await wire.send("resources/read", {"uri": f"file:///srv/{name}"}))["result"]
    assert read["contents"][0]["text"] == f"read {name}"


def test_a_variable_named_twice_is_refused_at_registration() -> None:
    app = MCPServer("t")
    with pytest.raises(InvalidSignature, match="appears twice"):

        @app.resource("pair://{a}-{a}")
        def pair(a: str) -> str:
            return a
