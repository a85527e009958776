"""How a layer's resolvers are run: one after the other until two may wait, then a group.

Each case is called several times on one app, because the engine learns from each call
whether a resolver waits (the first call of a fresh app takes the task group; later calls
run the resolvers known not to wait in the request's own task).
"""

from __future__ import annotations

from typing import Annotated

import anyio
import anyio.lowlevel
import pytest
from pydantic import BaseModel

from mrtr.server import Elicit, MCPServer, Resolve, ToolError

from ._drive import Wire, accept, text_of

pytestmark = pytest.mark.anyio


class Region(BaseModel):
    region: str


async def test_a_bare_checkpoint_beside_a_question_is_resumed_in_place(
    anyio_backend: str,
) -> None:
    app = MCPServer("checkpoint")

    async def looked_up(name: str) -> str:
        await anyio.lowlevel.checkpoint()  # its first step yields to the loop
        await anyio.lowlevel.checkpoint()
        return name.upper()

    async def ask_region(name: str) -> Elicit[Region]:
        return Elicit(f"Region for {name}?", Region)

    @app.tool()
    async def deploy(
        name: str,
        upper: Annotated[str, Resolve(looked_up)],
        region: Annotated[Region, Resolve(ask_region)],
    ) -> str:
        return f"{upper} in {region.region}"

    wire = Wire(app)
    for _ in range(3):  # fresh, then learned (the waiting one last, simply awaited)
        with anyio.fail_after(10):
            first = await wire.result("deploy", {"name": "web"})
            assert list(first["inputRequests"]) == ["ask_region"]
            done = await wire.result(
                "deploy",
                {"name": "web"},
                responses={"ask_region": accept(region="eu")},
                state=first["requestState"],
            )
        assert text_of(done) == "WEB in eu"


async def test_a_waiting_resolver_is_run_after_its_quick_sibling(anyio_backend: str) -> None:
    app = MCPServer("order")
    ready = anyio.Event()
    started: list[str] = []

    async def waiter() -> str:  # declared first; waits for what its sibling does
        started.append("waiter")
        with anyio.fail_after(10):
            await ready.wait()
        return "w"

    async def setter() -> str:  # returns without waiting
        started.append("setter")
        ready.set()
        return "s"

    @app.tool()
    async def both(w: Annotated[str, Resolve(waiter)], s: Annotated[str, Resolve(setter)]) -> str:
        return w + s

    wire = Wire(app)
    assert text_of(await wire.result("both")) == "ws"  # fresh: in a task group
    assert started == ["waiter", "setter"]
    for _ in range(2):
        started.clear()
        assert text_of(await wire.result("both")) == "ws"
        assert started == ["setter", "waiter"]  # learned: the quick one first, no group


async def test_two_waiting_resolvers_still_run_concurrently_once_learned(
    anyio_backend: str,
) -> None:
    app = MCPServer("par")
    started: list[str] = []
    both = anyio.Event()

    async def slow(name: str) -> str:
        started.append(name)
        if len(started) % 2 == 0:
            both.set()
        with anyio.fail_after(10):  # run one after the other, they would wait here
            await both.wait()
        return name

    async def lookup_a() -> str:
        return await slow("a")

    async def lookup_b() -> str:
        return await slow("b")

    @app.tool()
    async def combined(
        a: Annotated[str, Resolve(lookup_a)], b: Annotated[str, Resolve(lookup_b)]
    ) -> str:
        return a + b

    wire = Wire(app)
    for _ in range(3):
        both = anyio.Event()
        assert text_of(await wire.result("combined")) == "ab"


async def test_an_error_in_a_quick_sibling_stops_a_waiting_one(anyio_backend: str) -> None:
    app = MCPServer("fail")
    calls = 0
    waiting = {"started": 0, "cancelled": 0}
    parked = anyio.Event()

    async def hangs() -> str:
        waiting["started"] += 1
        parked.set()
        try:
            await anyio.sleep_forever()
        finally:
            waiting["cancelled"] += 1
        return "never"  # pragma: no cover

    async def flaky() -> str:  # no await: it returns, or raises, in its first step
        nonlocal calls
        calls += 1
        if calls == 1:
            raise ToolError("lookup failed")
        if calls == 2:
            return "ok"
        raise ToolError("lookup failed again")

    @app.tool()
    async def both(a: Annotated[str, Resolve(hangs)], b: Annotated[str, Resolve(flaky)]) -> str:
        return a + b

    wire = Wire(app)
    with anyio.fail_after(10):  # fresh: the group; the error cancels the waiting one
        result = await wire.result("both")
    assert text_of(result) == "Error executing tool both: lookup failed"
    assert waiting == {"started": 1, "cancelled": 1}

    parked = anyio.Event()

    async def cancel_when_parked() -> None:  # the second call hangs in `hangs`: end it
        await parked.wait()
        group.cancel_scope.cancel()

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:  # flaky learns it does not wait
            group.start_soon(cancel_when_parked)
            await wire.result("both")
    assert waiting == {"started": 2, "cancelled": 2}

    with anyio.fail_after(10):  # learned: flaky first, its error ends the call
        result = await wire.result("both")
    assert text_of(result) == "Error executing tool both: lookup failed again"
    assert waiting == {"started": 2, "cancelled": 2}  # the waiting one never started


async def test_the_question_type_cache_is_bounded_under_per_call_types() -> None:
    from typing import Any, Literal

    from mrtr.server import Context
    from mrtr.server._mcpserver import _asks

    app = MCPServer("churn")

    @app.tool()
    async def pick(options: list[str], ctx: Context) -> str:
        choice: Any = Literal[tuple(options)]  # a new type per distinct input
        answer = await ctx.ask(Elicit("Pick one", choice))
        return str(answer.data)

    wire = Wire(app)
    for i in range(_asks._CACHED + 64):
        asked = await wire.result("pick", {"options": [f"a{i}", f"b{i}"]})
        assert asked["resultType"] == "input_required"
        assert len(_asks._FORMS) <= _asks._CACHED
    assert Elicit("Pick", bool).form is Elicit("Pick", bool).form  # still kept


def test_the_rendered_question_cache_is_bounded() -> None:
    from mrtr.server._mcpserver import _asks

    for i in range(3 * _asks._CACHED):
        ask = Elicit(f"Region for {i}?", Region)
        ask.request()
        ask.parts()
    Elicit("x" * (_asks._CACHED_TEXT + 1), Region).request()
    assert 0 < len(_asks._REQUESTS) <= _asks._CACHED
    assert 0 < len(_asks._DIGESTS) <= _asks._CACHED
    assert all(len(message) <= _asks._CACHED_TEXT for message, _ in _asks._REQUESTS)
    first = Elicit("Region for web?", Region).request()
    assert Elicit("Region for web?", Region).request() is first  # shared: frozen
    assert first.params.message == "Region for web?"
