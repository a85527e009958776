"""mrtr's Client against the official SDK's multi-round-trip servers (mcp==2.3.0).

The servers live in ``servers/official_mrtr_server.py``: a low-level ``Server`` whose
tools build ``InputRequiredResult`` by hand, and an ``MCPServer`` with a
dependency-injected elicitation, a prompt and a resource template that ask. Every test
runs over streamable HTTP (the one uvicorn peer of the session, on 127.0.0.1) under
asyncio and trio, and over stdio (a subprocess per client) under asyncio; the tests
marked ``smoke`` also run over stdio under trio.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest

from mrtr import Client, ClientRequestContext
from mrtr.errors import (
    InputRequiredNotAllowedError,
    InputRequiredRoundsExceededError,
    MCPError,
)
from mrtr.types import (
    CallToolResult,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitRequestURLParams,
    ElicitResult,
    ErrorData,
    InputRequiredResult,
    ListRootsResult,
    Root,
    TextContent,
)
from tests.helpers.builders import text_of

pytestmark = [pytest.mark.anyio, pytest.mark.interop]

MODERN = "2026-07-28"
BOUND = 90  # generous: a slow, shared machine starts a Python subprocess per stdio client
CONNECT_URL = "https://auth.example.com/connect?flow=abc123&scope=read%20write#consent"

ANSWERS: dict[str, Any] = {
    "region": "eu-west-1",
    "name": "Ada",
    "colour": "teal",
    "size": "XL",
    "audience": "the board",
    "detail": "brief",
    "left": "L",
    "right": "R",
    "again": "yes",
    "sure": True,
}
ROOTS = [Root(uri="file:///work/a", name="a"), Root(uri="file:///work/b")]


# -- callbacks that record what they were given ----------------------------------------


@dataclass
class Recorder:
    """Callbacks for every kind of input request, each call recorded in order."""

    decline: bool = False
    calls: list[tuple[str, ClientRequestContext, Any]] = field(default_factory=list)

    async def elicit(self, ctx: ClientRequestContext, params: Any) -> ElicitResult:
        self.calls.append(("elicit", ctx, params))
        if self.decline:
            return ElicitResult(action="decline")
        if isinstance(params, ElicitRequestURLParams):
            return ElicitResult(action="accept")
        fields = params.requested_schema["properties"]
        return ElicitResult(action="accept", content={name: ANSWERS[name] for name in fields})

    async def sample(self, ctx: ClientRequestContext, params: Any) -> CreateMessageResult:
        self.calls.append(("sample", ctx, params))
        return CreateMessageResult(
            role="assistant", content=TextContent(type="text", text="cats purr"), model="m-1"
        )

    async def roots(self, ctx: ClientRequestContext) -> ListRootsResult:
        self.calls.append(("roots", ctx, None))
        return ListRootsResult(roots=ROOTS)

    def client(self, target: Any, **options: Any) -> Client:
        callbacks: dict[str, Any] = {
            "elicitation_callback": self.elicit,
            "sampling_callback": self.sample,
            "list_roots_callback": self.roots,
        }
        return Client(target, **{**callbacks, **options})


def check_context(
    ctx: ClientRequestContext,
    *,
    method: str,
    name: str,
    arguments: Any,
    round: int,
    key: str,
) -> None:
    assert (ctx.method, ctx.name, ctx.round, ctx.key) == (method, name, round, key)
    assert (dict(ctx.arguments) if ctx.arguments is not None else None) == arguments
    assert ctx.protocol_version == MODERN


# -- the low-level tool that asks by hand ----------------------------------------------


@pytest.mark.stdio_trio
async def test_provision_by_hand(target: Callable[[str], Any]) -> None:
    recorder = Recorder()
    events: list[Any] = []
    with anyio.fail_after(BOUND):
        async with recorder.client(target("lowlevel"), on_round=events.append) as client:
            assert client.protocol_version == MODERN
            declared = json.loads(text_of(await client.call_tool("capabilities", {})))
            result = await client.call_tool("provision", {"name": "orders"})
    # every callback is declared; URL mode was not asked for
    assert set(declared) >= {"elicitation", "sampling", "roots"}
    assert "url" not in declared["elicitation"]
    # the server saw the answer under its key and the state echoed byte for byte
    assert text_of(result) == "Provisioned 'orders' in eu-west-1 (state provision-v1)"
    assert not result.is_error
    [(kind, ctx, params)] = recorder.calls
    assert kind == "elicit"
    check_context(
        ctx,
        method="tools/call",
        name="provision",
        arguments={"name": "orders"},
        round=1,
        key="region",
    )
    assert isinstance(params, ElicitRequestFormParams)
    assert params.message == "Which region should the database live in?"
    assert params.requested_schema["required"] == ["region"]
    [event] = events
    assert event.round == 1
    assert event.keys == ("region",)
    assert event.kinds == ("elicitation/create",)
    assert event.request_state_size == len("provision-v1")
    assert event.outcome == "complete"
    assert (event.call.method, event.call.name) == ("tools/call", "provision")


async def test_decline_reaches_the_server(target: Callable[[str], Any]) -> None:
    recorder = Recorder(decline=True)
    with anyio.fail_after(BOUND):
        async with recorder.client(target("lowlevel")) as client:
            result = await client.call_tool("provision", {"name": "orders"})
    assert result.is_error
    assert text_of(result) == "Provisioning 'orders' abandoned: decline"
    assert len(recorder.calls) == 1


async def test_missing_callback_fails_the_call(target: Callable[[str], Any]) -> None:
    with anyio.fail_after(BOUND):
        async with Client(target("lowlevel")) as client:
            with pytest.raises(MCPError) as caught:
                await client.call_tool("provision", {"name": "orders"})
            assert caught.value.message == "Elicitation not supported"
            with pytest.raises(MCPError) as caught:
                await client.call_tool("summarize", {"topic": "cats"})
            assert caught.value.message == "Sampling not supported"
            with pytest.raises(MCPError) as caught:
                await client.call_tool("workspace", {})
            assert caught.value.message == "List roots not supported"
            # the connection is still usable after a failed call
            assert (await client.list_tools()).tools


async def test_callback_error_data_fails_the_call(target: Callable[[str], Any]) -> None:
    async def refuse(ctx: ClientRequestContext, params: Any) -> ErrorData:
        return ErrorData(code=-32042, message="the user walked away")

    with anyio.fail_after(BOUND):
        async with Client(target("lowlevel"), elicitation_callback=refuse) as client:
            with pytest.raises(MCPError) as caught:
                await client.call_tool("provision", {"name": "orders"})
    assert (caught.value.code, caught.value.message) == (-32042, "the user walked away")


# -- several rounds, state carried by the server ---------------------------------------


async def test_three_rounds_one_question_each(target: Callable[[str], Any]) -> None:
    recorder = Recorder()
    events: list[Any] = []
    with anyio.fail_after(BOUND):
        async with recorder.client(target("lowlevel"), on_round=events.append) as client:
            result = await client.call_tool("wizard", {})
    assert text_of(result) == "name=Ada;colour=teal;size=XL"
    keys = ["name", "colour", "size"]
    assert [ctx.key for _, ctx, _ in recorder.calls] == keys
    for number, (_, ctx, params) in enumerate(recorder.calls, start=1):
        check_context(
            ctx,
            method="tools/call",
            name="wizard",
            arguments={},
            round=number,
            key=keys[number - 1],
        )
        assert params.message == f"Step {number} of 3: your {keys[number - 1]}?"
    assert [event.round for event in events] == [1, 2, 3]
    assert [event.keys for event in events] == [("name",), ("colour",), ("size",)]
    assert [event.outcome for event in events] == ["input_required", "input_required", "complete"]
    states = ["{}", json.dumps({"name": "Ada"}), json.dumps({"colour": "teal", "name": "Ada"})]
    assert [event.request_state_size for event in events] == [len(state) for state in states]


@pytest.mark.stdio_trio
async def test_state_only_round_waits_then_retries(target: Callable[[str], Any]) -> None:
    events: list[Any] = []
    with anyio.fail_after(BOUND):
        async with Client(target("lowlevel"), on_round=events.append) as client:
            result = await client.call_tool("poll", {})
    assert text_of(result) == "poll: done"
    [event] = events
    assert (event.keys, event.wait_seconds, event.outcome) == ((), 0.05, "complete")
    assert event.request_state_size == len("poll-pending")


async def test_two_questions_in_one_round_are_answered_concurrently(
    target: Callable[[str], Any],
) -> None:
    arrived = {"left": anyio.Event(), "right": anyio.Event()}
    contexts: list[ClientRequestContext] = []

    async def elicit(ctx: ClientRequestContext, params: Any) -> ElicitResult:
        assert ctx.key is not None
        contexts.append(ctx)
        arrived[ctx.key].set()
        # each answer waits for the other question to arrive: only a concurrent
        # dispatch can finish
        other = "right" if ctx.key == "left" else "left"
        with anyio.fail_after(BOUND):
            await arrived[other].wait()
        return ElicitResult(action="accept", content={ctx.key: ctx.key.upper()})

    with anyio.fail_after(2 * BOUND):
        async with Client(target("lowlevel"), elicitation_callback=elicit) as client:
            result = await client.call_tool("pair", {})
    assert text_of(result) == "left=LEFT right=RIGHT"
    assert sorted(ctx.key for ctx in contexts if ctx.key) == ["left", "right"]
    assert {ctx.round for ctx in contexts} == {1}


# -- sampling, roots, URL mode ----------------------------------------------------------


async def test_sampling(target: Callable[[str], Any]) -> None:
    recorder = Recorder()
    with anyio.fail_after(BOUND):
        async with recorder.client(target("lowlevel")) as client:
            result = await client.call_tool("summarize", {"topic": "cats"})
    assert text_of(result) == "m-1 says: cats purr"
    [(kind, ctx, params)] = recorder.calls
    assert kind == "sample"
    check_context(
        ctx, method="tools/call", name="summarize", arguments={"topic": "cats"}, round=1, key="llm"
    )
    assert isinstance(params, CreateMessageRequestParams)
    assert params.max_tokens == 64
    assert params.system_prompt == "Be brief."
    [message] = params.messages
    assert message.role == "user"
    assert isinstance(message.content, TextContent)
    assert message.content.text == "Summarize cats."


async def test_roots(target: Callable[[str], Any]) -> None:
    recorder = Recorder()
    with anyio.fail_after(BOUND):
        async with recorder.client(target("lowlevel")) as client:
            result = await client.call_tool("workspace", {})
    assert text_of(result) == "file:///work/a,file:///work/b"
    [(kind, ctx, _)] = recorder.calls
    assert kind == "roots"
    check_context(ctx, method="tools/call", name="workspace", arguments={}, round=1, key="roots")


async def test_url_mode_elicitation(target: Callable[[str], Any]) -> None:
    recorder = Recorder()
    with anyio.fail_after(BOUND):
        async with recorder.client(target("lowlevel"), elicitation_url_mode=True) as client:
            declared = json.loads(text_of(await client.call_tool("capabilities", {})))
            result = await client.call_tool("connect", {})
    assert declared["elicitation"]["url"] == {}
    assert text_of(result) == "connect: accept"
    [(kind, ctx, params)] = recorder.calls
    assert kind == "elicit"
    check_context(ctx, method="tools/call", name="connect", arguments={}, round=1, key="login")
    assert isinstance(params, ElicitRequestURLParams)
    assert params.url == CONNECT_URL  # whole: query and fragment kept
    assert params.message == "Sign in to the example service."


async def test_url_mode_is_declared_only_on_request(target: Callable[[str], Any]) -> None:
    recorder = Recorder()
    with anyio.fail_after(BOUND):
        async with Client(target("lowlevel"), elicitation_callback=recorder.elicit) as client:
            declared = json.loads(text_of(await client.call_tool("capabilities", {})))
            result = await client.call_tool("connect", {})
    # form only; no sampling or roots without their callbacks
    assert "url" not in declared["elicitation"]
    assert "sampling" not in declared
    assert "roots" not in declared
    # the server saw no URL capability, so it never asked
    assert result.is_error
    assert text_of(result) == "connect: the client cannot do URL-mode elicitation"
    assert recorder.calls == []


# -- the round cap ----------------------------------------------------------------------


async def test_a_server_that_keeps_asking_hits_the_cap(target: Callable[[str], Any]) -> None:
    recorder = Recorder()
    events: list[Any] = []
    with anyio.fail_after(BOUND):
        async with recorder.client(
            target("lowlevel"), input_required_max_rounds=3, on_round=events.append
        ) as client:
            with pytest.raises(InputRequiredRoundsExceededError) as caught:
                await client.call_tool("forever", {})
            error = caught.value
            assert error.max_rounds == 3
            # 3 retries: 4 legs; the 4th answer is the last InputRequiredResult
            assert isinstance(error.last, InputRequiredResult)
            assert error.last.request_state == "forever-4"
            assert list(error.last.input_requests or {}) == ["again"]
            assert [ctx.round for _, ctx, _ in recorder.calls] == [1, 2, 3]
            # .last is enough to go on by hand
            more = await client.session.call_tool(
                "forever",
                {},
                input_responses={"again": ElicitResult(action="accept", content={"again": "y"})},
                request_state=error.last.request_state,
                allow_input_required=True,
            )
            # a per-call cap overrides the client's
            recorder.calls.clear()
            with pytest.raises(InputRequiredRoundsExceededError) as caught:
                await client.call_tool("forever", {}, input_required_max_rounds=10)
    assert isinstance(more, InputRequiredResult)
    assert more.request_state == "forever-5"
    assert [event.outcome for event in events[:4]] == ["input_required"] * 3 + ["error"]
    assert caught.value.max_rounds == 10
    assert caught.value.last is not None
    assert caught.value.last.request_state == "forever-11"
    assert len(recorder.calls) == 10


# -- the manual loop --------------------------------------------------------------------


async def test_manual_loop(target: Callable[[str], Any]) -> None:
    with anyio.fail_after(BOUND):
        async with Client(target("lowlevel")) as client:
            with pytest.raises(InputRequiredNotAllowedError):
                await client.session.call_tool("provision", {"name": "orders"})
            result = await client.session.call_tool(
                "provision", {"name": "orders"}, allow_input_required=True
            )
            assert isinstance(result, InputRequiredResult)
            assert result.request_state == "provision-v1"
            request = (result.input_requests or {})["region"]
            assert isinstance(request, ElicitRequest)
            # drive the three-round wizard by hand, writing the state between legs
            legs = 0
            wizard = await client.session.call_tool("wizard", {}, allow_input_required=True)
            while isinstance(wizard, InputRequiredResult):
                legs += 1
                saved = wizard.request_state  # what a distributed client would persist
                responses = {
                    key: ElicitResult(action="accept", content={key: ANSWERS[key]})
                    for key in (wizard.input_requests or {})
                }
                wizard = await client.session.call_tool(
                    "wizard",
                    {},
                    input_responses=responses,
                    request_state=saved,
                    allow_input_required=True,
                )
            final = await client.session.call_tool(
                "provision",
                {"name": "orders"},
                input_responses={
                    "region": ElicitResult(action="accept", content={"region": "ap-south-1"})
                },
                request_state=result.request_state,
                allow_input_required=True,
            )
    assert legs == 3
    assert isinstance(wizard, CallToolResult)
    assert text_of(wizard) == "name=Ada;colour=teal;size=XL"
    assert isinstance(final, CallToolResult)
    assert text_of(final) == "Provisioned 'orders' in ap-south-1 (state provision-v1)"


async def test_resuming_a_flow_through_call_tool(target: Callable[[str], Any]) -> None:
    recorder = Recorder()
    with anyio.fail_after(BOUND):
        async with recorder.client(target("lowlevel")) as client:
            # seed the first leg with what an earlier process persisted: the wizard's
            # second round, so only two questions remain
            result = await client.call_tool(
                "wizard",
                {},
                input_responses={"colour": {"action": "accept", "content": {"colour": "red"}}},
                request_state=json.dumps({"name": "Bo"}),
            )
    assert text_of(result) == "name=Bo;colour=red;size=XL"
    assert [ctx.key for _, ctx, _ in recorder.calls] == ["size"]


# -- MCPServer: dependency injection, a prompt and a resource template that ask ---------


@pytest.mark.stdio_trio
async def test_dependency_injected_elicitation(target: Callable[[str], Any]) -> None:
    recorder = Recorder()
    with anyio.fail_after(BOUND):
        async with recorder.client(target("high")) as client:
            assert client.protocol_version == MODERN
            result = await client.call_tool("deploy", {"service": "api"})
    assert text_of(result) == "deployed api to eu-west-1"
    [(kind, ctx, params)] = recorder.calls
    assert kind == "elicit"
    assert ctx.key is not None and ctx.key.endswith(":ask_region")  # the resolver's wire key
    check_context(
        ctx, method="tools/call", name="deploy", arguments={"service": "api"}, round=1, key=ctx.key
    )
    assert isinstance(params, ElicitRequestFormParams)
    assert params.message == "Which region should api be deployed to?"
    assert "region" in params.requested_schema["properties"]


async def test_dependency_injected_decline(target: Callable[[str], Any]) -> None:
    recorder = Recorder(decline=True)
    with anyio.fail_after(BOUND):
        async with recorder.client(target("high")) as client:
            declined = await client.call_tool("delete", {"target": "db"})
            recorder.decline = False
            accepted = await client.call_tool("delete", {"target": "db"})
    # the tool takes the whole outcome, so a decline reaches its body
    assert text_of(declined) == "kept db (decline)"
    assert text_of(accepted) == "deleted db"
    [(_, ctx, params), _] = recorder.calls
    assert params.message == "Really delete db?"
    assert ctx.key is not None and ctx.key.endswith(":ask_confirmation")


async def test_prompt_that_asks(target: Callable[[str], Any]) -> None:
    recorder = Recorder()
    with anyio.fail_after(BOUND):
        async with recorder.client(target("high")) as client:
            result = await client.get_prompt("briefing")
    [message] = result.messages
    assert message.role == "user"
    assert isinstance(message.content, TextContent)
    assert message.content.text == "Write a briefing for the board."
    [(_, ctx, params)] = recorder.calls
    check_context(
        ctx, method="prompts/get", name="briefing", arguments=None, round=1, key="audience"
    )
    assert params.message == "Who is the briefing for?"


async def test_resource_template_that_asks(target: Callable[[str], Any]) -> None:
    recorder = Recorder()
    events: list[Any] = []
    with anyio.fail_after(BOUND):
        async with recorder.client(target("high"), on_round=events.append) as client:
            result = await client.read_resource("notes://cats")
    [contents] = result.contents
    assert str(contents.uri) == "notes://cats"
    # the server sealed its state; mrtr echoed the sealed token and the server read it back
    assert getattr(contents, "text", None) == "brief notes on cats (state cats)"
    [(_, ctx, params)] = recorder.calls
    check_context(
        ctx, method="resources/read", name="notes://cats", arguments=None, round=1, key="detail"
    )
    assert params.message == "How detailed should the notes on cats be?"
    [event] = events
    assert event.request_state_size is not None and event.request_state_size > len("cats")
    assert (event.call.method, event.call.name) == ("resources/read", "notes://cats")
