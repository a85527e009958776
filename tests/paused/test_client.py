"""`pause_call_tool(...)`, `resume`, and what a resume checks first (in-process server)."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import anyio
import pytest

from mrtr import (
    PAUSE,
    Client,
    ClientRequestContext,
    ClientStateError,
    InputRequiredRoundsExceededError,
    PausedCall,
    PausedCallExpiredError,
    PausedCallFormatError,
    PausedCallIncompleteError,
    PausedCallMismatchError,
    RoundEvent,
    TransportError,
)
from mrtr.transports import StdioServerParameters, create_memory_transport_pair
from mrtr.types import (
    CallToolResult,
    ElicitRequestParams,
    ElicitResult,
    GetPromptResult,
    ListRootsResult,
    ReadResourceResult,
    Root,
)
from tests.helpers.launch import module_command, running
from tests.helpers.mrtr_servers.approvals import make_server
from tests.helpers.surrogate_peer import LONE, answer
from tests.paused.processes import ROOT, env

pytestmark = pytest.mark.anyio

DECLARE: dict[str, Any] = {
    "elicitation": {},
    "roots": {},
}  # a pausing client still says what it can answer
BOUND = 30


def accept(field: str, value: str) -> ElicitResult:
    return ElicitResult(action="accept", content={field: value})


async def roots(ctx: ClientRequestContext) -> ListRootsResult:
    return ListRootsResult(roots=[Root(uri="file:///work")])


def text_of(result: Any) -> str:
    assert isinstance(result, CallToolResult)
    return result.content[0].text  # type: ignore[union-attr]


async def test_pause_keeps_live_answers_and_resume_runs_to_the_end() -> None:
    server, tally = make_server()
    events: list[RoundEvent] = []
    with anyio.fail_after(BOUND):
        async with Client(
            server, list_roots_callback=roots, capabilities=DECLARE, on_round=events.append
        ) as client:
            first = await client.pause_call_tool("approve", {"n": 1})
            assert isinstance(first, PausedCall)
            assert (first.round, first.missing) == (1, ("approval",))
            assert isinstance(first.answers["roots"], ListRootsResult)  # answered live, kept
            assert first.server_name == "Approvals" and first.protocol_version == "2026-07-28"
            assert tally.retries["1"] == 0  # nothing was sent for the paused round
            assert events[-1].outcome == "paused" and events[-1].round == 1

            stored = first.to_json()
        async with Client(server, list_roots_callback=roots, capabilities=DECLARE) as other:
            answered = PausedCall.from_json(stored).answer("approval", accept("approval", "yes"))
            second = await other.resume(answered)
            assert isinstance(second, PausedCall)
            assert second.id == first.id and second.round == 2 and second.missing == ("confirm",)
            assert second.created_at == first.created_at
            done = await other.resume(second.answer("confirm", accept("confirm", "sure")))
    assert text_of(done) == "approval=yes roots=file:///work confirm=sure"
    assert tally.retries["1"] == 2  # one retry per answered round


async def test_pause_true_still_pauses_and_says_it_is_deprecated() -> None:
    server, _ = make_server()
    with anyio.fail_after(BOUND):
        async with Client(server, list_roots_callback=roots, capabilities=DECLARE) as client:
            with pytest.warns(DeprecationWarning, match="pause_call_tool") as caught:
                tool = await client.call_tool("approve", {"n": 7}, pause=True)
            assert caught[0].filename == __file__  # it points at the caller's line
            with pytest.warns(DeprecationWarning, match="pause_get_prompt"):
                prompt = await client.get_prompt("briefing", pause=True)
            with pytest.warns(DeprecationWarning, match="pause_read_resource"):
                note = await client.read_resource("notes://x", pause=True)
            assert isinstance(tool, PausedCall) and tool.method == "tools/call"
            assert isinstance(prompt, PausedCall) and isinstance(note, PausedCall)


async def test_a_callback_returning_pause_defers_only_its_key() -> None:
    server, _ = make_server()
    asked: list[str] = []

    async def elicit(ctx: ClientRequestContext, params: ElicitRequestParams) -> Any:
        asked.append(f"{ctx.round}:{ctx.key}")
        return PAUSE if ctx.key == "approval" else accept("confirm", "live")

    with anyio.fail_after(BOUND):
        async with Client(server, elicitation_callback=elicit, list_roots_callback=roots) as client:
            paused = await client.pause_call_tool("approve", {"n": 2})
            assert isinstance(paused, PausedCall) and paused.missing == ("approval",)
            # round 2 is answered by the live callback: the resume runs to the end
            done = await client.resume(paused.answer("approval", accept("approval", "later")))
    assert text_of(done) == "approval=later roots=file:///work confirm=live"
    assert asked == ["1:approval", "2:confirm"]


async def test_pause_in_a_call_that_may_not_pause_is_a_clear_error_and_sends_nothing() -> None:
    server, tally = make_server()

    async def elicit(ctx: ClientRequestContext, params: ElicitRequestParams) -> Any:
        return PAUSE

    with anyio.fail_after(BOUND):
        async with Client(server, elicitation_callback=elicit, list_roots_callback=roots) as client:
            with pytest.raises(ClientStateError, match=r"may not pause.*pause_call_tool"):
                await client.call_tool("approve", {"n": 3})
    assert tally.retries["3"] == 0


async def test_resume_checks_before_sending() -> None:
    server, tally = make_server()
    with anyio.fail_after(BOUND):
        async with Client(server, list_roots_callback=roots, capabilities=DECLARE) as client:
            paused = await client.pause_call_tool("approve", {"n": 4})
            assert isinstance(paused, PausedCall)
            with pytest.raises(PausedCallIncompleteError) as incomplete:
                await client.resume(paused)
            assert incomplete.value.missing == ("approval",)
            ready = paused.answer("approval", accept("approval", "yes"))
            with pytest.raises(PausedCallExpiredError):
                await client.resume(replace(ready, expires_at=ready.paused_at - 1))
            with pytest.raises(PausedCallMismatchError) as era:
                await client.resume(replace(ready, protocol_version="2099-01-01"))
            assert era.value.field == "protocol_version"
            with pytest.raises(PausedCallFormatError):
                await client.resume(replace(ready, version=2))
        other_server, _ = make_server("Someone else")
        async with Client(other_server, capabilities=DECLARE) as other:
            with pytest.raises(PausedCallMismatchError) as server_mismatch:
                await other.resume(ready)
            assert server_mismatch.value.expected == "Approvals"
            assert server_mismatch.value.actual == "Someone else"
    assert tally.retries["4"] == 0


async def test_resume_keeps_the_round_cap_of_the_value() -> None:
    server, _ = make_server()
    with anyio.fail_after(BOUND):
        async with Client(
            server, list_roots_callback=roots, capabilities=DECLARE, input_required_max_rounds=1
        ) as client:
            paused = await client.pause_call_tool("approve", {"n": 5})
            assert isinstance(paused, PausedCall) and paused.max_rounds == 1
        async with Client(server, list_roots_callback=roots, capabilities=DECLARE) as other:
            with pytest.raises(InputRequiredRoundsExceededError):
                await other.resume(paused.answer("approval", accept("approval", "y")))


async def test_prompts_and_resources_pause_too() -> None:
    server, _ = make_server()
    with anyio.fail_after(BOUND):
        async with Client(server, capabilities=DECLARE) as client:
            prompt = await client.pause_get_prompt("briefing")
            assert isinstance(prompt, PausedCall) and prompt.method == "prompts/get"
            result = await client.resume(prompt.answer("audience", accept("audience", "board")))
            assert isinstance(result, GetPromptResult)
            assert result.messages[0].content.text == "for board"  # type: ignore[union-attr]
            note = await client.pause_read_resource("notes://x")
            assert isinstance(note, PausedCall) and note.name == "notes://x"
            read = await client.resume(note.answer("detail", accept("detail", "brief")))
            assert isinstance(read, ReadResourceResult)
            assert read.contents[0].text == "brief notes"  # type: ignore[union-attr]


async def test_a_call_that_needs_no_answers_does_not_pause() -> None:
    server, _ = make_server()
    with anyio.fail_after(BOUND):
        async with Client(server, capabilities=DECLARE) as client:
            result = await client.pause_call_tool("counts")
            assert isinstance(result, CallToolResult)


async def test_legacy_connections_cannot_pause() -> None:
    server, _ = make_server()
    with anyio.fail_after(BOUND):
        async with Client(server, mode="legacy", capabilities=DECLARE) as client:
            with pytest.raises(ClientStateError, match="2026-07-28"):
                await client.pause_call_tool("approve", {"n": 6})


SURROGATE = "tests.helpers.surrogate_peer"


@contextmanager
def raw_server(transport: str) -> Iterator[Any]:
    """The lone-surrogate peer in a subprocess, over stdio or HTTP."""
    if transport == "http":
        with running(module_command(SURROGATE, "http"), stop_bound=15) as url:
            yield url
        return
    yield StdioServerParameters(
        command=sys.executable,
        args=["-m", SURROGATE, "stdio"],
        env={"PYTHONPATH": env()["PYTHONPATH"]},
        cwd=str(ROOT),
    )


def test_pause_ttl_must_be_positive() -> None:
    with pytest.raises(ValueError, match="pause_ttl"):
        Client("http://127.0.0.1:1/mcp", pause_ttl=0)


async def test_a_lone_surrogate_state_comes_back_byte_for_byte_in_memory() -> None:
    client_end, server_end = create_memory_transport_pair()

    async def peer() -> None:
        with contextlib.suppress(TransportError):  # the client hung up: the peer is done
            while True:
                message = await server_end.receive()
                reply = answer(message) if isinstance(message, dict) else None
                if reply is not None:
                    await server_end.send(reply)

    with anyio.fail_after(BOUND):
        async with anyio.create_task_group() as tg:
            tg.start_soon(peer)
            async with Client(client_end, capabilities={"elicitation": {}}) as client:
                paused = await client.pause_call_tool("raw")
                assert isinstance(paused, PausedCall) and paused.request_state == LONE
                again = PausedCall.from_json(paused.to_json()).answer("ok", accept("ok", "y"))
                result = await client.resume(again)
            tg.cancel_scope.cancel()
    assert json.loads(text_of(result)) == LONE


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_lone_surrogate_state_crosses_real_transports(transport: str) -> None:
    with anyio.fail_after(BOUND), raw_server(transport) as target:
        async with Client(target, capabilities={"elicitation": {}}) as client:
            paused = await client.pause_call_tool("raw")
            assert isinstance(paused, PausedCall) and paused.request_state == LONE
        async with Client(target, capabilities={"elicitation": {}}) as other:
            again = PausedCall.from_json(paused.to_json()).answer("ok", accept("ok", "y"))
            result = await other.resume(again)
    assert json.loads(text_of(result)) == LONE
