from __future__ import annotations

import sys
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest

from mrtr.client import Client, ClientRequestContext, ClientState
from mrtr.errors import (
    ClientStateError,
    DeadlineExceededError,
    InputRequiredRoundsExceededError,
    MCPError,
    ProtocolError,
    TransportError,
)
from mrtr.flow._driver import RoundEvent
from mrtr.transports import Transport, create_memory_transport_pair
from mrtr.types import (
    CallToolResult,
    ElicitRequestFormParams,
    ElicitResult,
    InputRequiredResult,
    ListRootsResult,
    Root,
)
from tests.helpers.peer import (
    JSON,
    LEGACY,
    MODERN,
    PeerError,
    ScriptedPeer,
    discover_result,
    initialize_result,
)

if sys.version_info < (3, 11):
    from exceptiongroup import BaseExceptionGroup

pytestmark = pytest.mark.anyio

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TOOL_RESULT = {"content": [{"type": "text", "text": "done"}]}


def elicit_request(message: str = "Which region?") -> JSON:
    return {
        "method": "elicitation/create",
        "params": {
            "message": message,
            "requestedSchema": {"type": "object", "properties": {"region": {"type": "string"}}},
        },
    }


def ask(state: str | None = "s1", **requests: JSON) -> JSON:
    result: JSON = {"resultType": "input_required"}
    if requests:
        result["inputRequests"] = requests
    if state is not None:
        result["requestState"] = state
    return result


class Server:
    """A Client target over the in-memory pair: `client_transport()` plus a scripted peer."""

    def __init__(self) -> None:
        self.client_end, server_end = create_memory_transport_pair()
        self.peer = ScriptedPeer(server_end)

    def client_transport(self) -> Transport:
        return self.client_end


async def run(
    server: Server,
    handlers: dict[str, Any],
    body: Any,
    *,
    version: str = MODERN,
    **client_kwargs: Any,
) -> Client:
    """Serve `handlers` while `body(client)` runs inside `async with Client(server)`."""
    client = Client(server, **client_kwargs)
    try:
        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                tg.start_soon(partial(server.peer.serve, handlers, version=version))
                try:
                    async with client:
                        await body(client)
                finally:
                    tg.cancel_scope.cancel()
                    await server.peer.transport.aclose()
                    await server.client_end.aclose()
    except BaseExceptionGroup as group:  # the test's own task group: show the real error
        if len(group.exceptions) == 1:
            raise group.exceptions[0] from None
        raise
    return client


# -- construction and lifecycle -------------------------------------------------------------


class Unused:
    """A target that must never be connected."""

    def client_transport(self) -> Transport:
        raise AssertionError("not connected in this test")


def test_construction_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="mode"):
        Client(Unused(), mode="2099-01-01")
    with pytest.raises(ValueError):
        Client(Unused(), input_required_max_rounds=-1)
    with pytest.raises(ValueError):
        Client(Unused(), call_timeout=0)
    with pytest.raises(TypeError):
        Client(42)  # type: ignore[arg-type]
    Client(Unused(), mode="legacy")
    Client(Unused(), mode=MODERN)


async def test_lifecycle_is_explicit() -> None:
    client = Client(Unused())
    assert client.state is ClientState.UNOPENED
    with pytest.raises(ClientStateError):
        await client.list_tools()
    with pytest.raises(RuntimeError):  # misuse is also a builtin RuntimeError
        await client.list_tools()
    with pytest.raises(ClientStateError):
        _ = client.protocol_version

    async def body(c: Client) -> None:
        assert c.state is ClientState.OPEN

    opened = await run(Server(), {}, body)
    assert opened.state is ClientState.CLOSED
    with pytest.raises(ClientStateError):
        await opened.list_tools()
    closed = Client(Unused())
    await closed.aclose()
    with pytest.raises(ClientStateError):
        async with closed:
            pass


async def test_settings_are_read_only_once_opened() -> None:
    client = Client(Unused(), call_timeout=5)
    client.call_timeout = 6  # before opening, settings may still change
    server = Server()

    async def body(c: Client) -> None:
        with pytest.raises(ClientStateError, match="call_timeout"):
            c.call_timeout = 1
        with pytest.raises(ClientStateError, match="elicitation_callback"):
            c.elicitation_callback = None
        assert c.call_timeout == 6

    opened = await run(server, {}, body, call_timeout=6)
    with pytest.raises(ClientStateError):
        opened.headers = {"x": "y"}
    assert client.call_timeout == 6


async def test_the_client_is_open_only_once_negotiation_succeeded() -> None:
    server = Server()
    seen: list[ClientState] = []
    client: Client | None = None

    async def discover(_: JSON) -> JSON:
        assert client is not None
        seen.append(client.state)
        return discover_result([MODERN])

    async def body(c: Client) -> None:
        seen.append(c.state)

    client = Client(server)
    async with anyio.create_task_group() as tg:
        tg.start_soon(partial(server.peer.serve, {"server/discover": discover}))
        with anyio.fail_after(30):
            async with client:
                await body(client)
        tg.cancel_scope.cancel()
    assert seen == [ClientState.UNOPENED, ClientState.OPEN]

    refused = Server()
    failing = Client(refused, mode="legacy")

    async def initialize(_: JSON) -> JSON:
        raise PeerError(-32600, "no")

    async with anyio.create_task_group() as tg:
        tg.start_soon(partial(refused.peer.serve, {"initialize": initialize}))
        with anyio.fail_after(30), pytest.raises(MCPError):
            async with failing:
                pass
        tg.cancel_scope.cancel()
    assert failing.state is ClientState.CLOSED
    with pytest.raises(ClientStateError):
        _ = failing.session


async def test_an_error_in_the_block_leaves_as_itself() -> None:
    server = Server()

    async def fails(_: JSON) -> JSON:
        raise PeerError(-32000, "nope")

    async def body(client: Client) -> None:
        await client.call_tool("t")

    with pytest.raises(MCPError) as info:
        await run(server, {"tools/call": fails}, body)
    assert info.value.code == -32000 and info.value.message == "nope"

    class Mine(Exception):
        pass

    async def raises_mine(client: Client) -> None:
        raise Mine

    with pytest.raises(Mine):
        await run(Server(), {}, raises_mine)


# -- negotiation ---------------------------------------------------------------------------


async def test_auto_lands_on_modern_when_discover_succeeds() -> None:
    server = Server()

    async def body(client: Client) -> None:
        assert client.protocol_version == MODERN
        assert client.server_info is not None and client.server_info.name == "scripted-peer"
        assert client.server_capabilities.tools is not None

    await run(server, {}, body)
    assert [m["method"] for m in server.peer.received] == ["server/discover"]


async def test_auto_falls_back_on_unsupported_version() -> None:
    server = Server()

    async def refuse(_: JSON) -> JSON:
        raise PeerError(-32022, "Unsupported protocol version", {"supported": [LEGACY]})

    async def body(client: Client) -> None:
        assert client.protocol_version == LEGACY
        assert client.session.era == "legacy"

    await run(server, {"server/discover": refuse}, body, version=LEGACY)
    methods = [m["method"] for m in server.peer.received]
    assert methods == ["server/discover", "initialize", "notifications/initialized"]


@pytest.mark.parametrize("mode", ["auto", MODERN])
async def test_unsupported_version_naming_ours_is_retried_not_a_fallback(mode: str) -> None:
    server = Server()
    refusals = iter([True])

    async def refuse_once(request: JSON) -> JSON:
        if next(refusals, False):
            raise PeerError(-32022, "Unsupported protocol version", {"supported": [MODERN]})
        return discover_result([MODERN])

    async def body(client: Client) -> None:
        assert client.protocol_version == MODERN
        assert client.session.era == "modern"

    await run(server, {"server/discover": refuse_once}, body, mode=mode)
    assert [m["method"] for m in server.peer.received] == ["server/discover"] * 2


async def test_a_server_that_keeps_refusing_its_own_versions_fails_the_connect() -> None:
    async def refuse(_: JSON) -> JSON:
        raise PeerError(-32022, "Unsupported protocol version", {"supported": [MODERN]})

    async def body(client: Client) -> None:
        raise AssertionError("unreachable")

    server = Server()
    with pytest.raises(MCPError) as info:
        await run(server, {"server/discover": refuse}, body)
    assert info.value.code == -32022
    assert [m["method"] for m in server.peer.received] == ["server/discover"] * 3


async def test_auto_falls_back_on_method_not_found_and_bad_results() -> None:
    async def body(client: Client) -> None:
        assert client.protocol_version == LEGACY

    server = Server()  # no discover handler on a legacy peer: -32601
    await run(server, {}, body, version=LEGACY)

    async def garbage(_: JSON) -> JSON:
        return {"nothing": "useful"}

    async def legacy_only(_: JSON) -> JSON:
        return discover_result([LEGACY])

    for handler in (garbage, legacy_only):
        await run(Server(), {"server/discover": handler}, body, version=LEGACY)


async def test_transport_failure_is_not_an_era_verdict() -> None:
    server = Server()
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:

            async def script() -> None:
                await server.peer.expect_request("server/discover")
                await server.peer.transport.aclose()

            tg.start_soon(script)
            with pytest.raises(TransportError):
                async with Client(server):
                    raise AssertionError("unreachable")
    await server.client_end.aclose()
    assert [m["method"] for m in server.peer.received] == ["server/discover"]


async def test_legacy_mode_only_initializes_and_explicit_modern_needs_support() -> None:
    server = Server()

    async def body(client: Client) -> None:
        assert client.protocol_version == LEGACY

    await run(server, {}, body, version=LEGACY, mode="legacy")
    assert server.peer.received[0]["method"] == "initialize"

    async def legacy_only(_: JSON) -> JSON:
        return discover_result([LEGACY])

    with pytest.raises(ProtocolError):
        await run(Server(), {"server/discover": legacy_only}, body, mode=MODERN)


# -- listing -------------------------------------------------------------------------------


async def test_iter_tools_walks_every_page() -> None:
    pages = {None: ("a", "p2"), "p2": ("b", "p3"), "p3": ("c", None)}

    async def list_tools(request: JSON) -> JSON:
        name, cursor = pages[request["params"].get("cursor")]
        result: JSON = {"tools": [{"name": name, "inputSchema": {"type": "object"}}]}
        if cursor:
            result["nextCursor"] = cursor
        return result

    async def body(client: Client) -> None:
        assert [tool.name async for tool in client.iter_tools()] == ["a", "b", "c"]
        page = await client.list_tools("p2")
        assert page.next_cursor == "p3"

    await run(Server(), {"tools/list": list_tools}, body)

    async def loops(request: JSON) -> JSON:
        return {"tools": [], "nextCursor": "same"}

    async def walk(client: Client) -> None:
        async for _ in client.iter_tools():
            pass

    with pytest.raises(ProtocolError, match="repeated"):
        await run(Server(), {"tools/list": loops}, walk)


# -- the automatic loop --------------------------------------------------------------------


async def test_call_tool_answers_rounds_with_the_callbacks() -> None:
    contexts: list[ClientRequestContext] = []
    events: list[RoundEvent] = []

    async def elicit(ctx: ClientRequestContext, params: Any) -> ElicitResult:
        contexts.append(ctx)
        assert isinstance(params, ElicitRequestFormParams)
        return ElicitResult(action="accept", content={"region": "eu-west-1"})

    async def roots(ctx: ClientRequestContext) -> ListRootsResult:
        contexts.append(ctx)
        return ListRootsResult(roots=[Root(uri="file:///w")])

    async def provision(request: JSON) -> JSON:
        params = request["params"]
        responses = params.get("inputResponses")
        if responses is None:
            return ask("s1", region=elicit_request())
        if params.get("requestState") == "s1":
            assert responses == {"region": {"action": "accept", "content": {"region": "eu-west-1"}}}
            return ask("s2", where={"method": "roots/list"})
        assert params["requestState"] == "s2"
        assert responses["where"] == {"roots": [{"uri": "file:///w"}]}
        return TOOL_RESULT

    async def body(client: Client) -> None:
        result = await client.call_tool("provision", {"name": "orders"})
        assert isinstance(result, CallToolResult)
        assert result.content[0].text == "done"  # type: ignore[union-attr]

    server = Server()
    await run(
        server,
        {"tools/call": provision},
        body,
        elicitation_callback=elicit,
        list_roots_callback=roots,
        on_round=events.append,
    )
    legs = [m for m in server.peer.received if m.get("method") == "tools/call"]
    assert len(legs) == 3 and len({leg["id"] for leg in legs}) == 3
    assert all(leg["params"]["_meta"] == legs[0]["params"]["_meta"] for leg in legs)
    assert all(leg["params"]["arguments"] == {"name": "orders"} for leg in legs)
    assert "requestState" not in legs[0]["params"]
    first, second = contexts
    assert (first.method, first.name, first.arguments) == (
        "tools/call",
        "provision",
        {"name": "orders"},
    )
    assert (first.round, first.key, first.protocol_version) == (1, "region", MODERN)
    assert (second.round, second.key) == (2, "where")
    assert [(e.round, e.keys, e.outcome) for e in events] == [
        (1, ("region",), "input_required"),
        (2, ("where",), "complete"),
    ]


async def test_missing_callback_fails_the_call() -> None:
    async def asks(_: JSON) -> JSON:
        return ask(None, region=elicit_request())

    async def body(client: Client) -> None:
        with pytest.raises(MCPError, match="Elicitation not supported"):
            await client.call_tool("t")

    await run(Server(), {"tools/call": asks}, body)


async def test_round_cap_raises_with_the_last_result() -> None:
    count = 0

    async def keeps_asking(_: JSON) -> JSON:
        nonlocal count
        count += 1
        return ask(f"s{count}", region=elicit_request())

    async def elicit(ctx: ClientRequestContext, params: Any) -> ElicitResult:
        return ElicitResult(action="decline")

    async def body(client: Client) -> None:
        with pytest.raises(InputRequiredRoundsExceededError) as info:
            await client.call_tool("t", input_required_max_rounds=2)
        assert info.value.max_rounds == 2
        assert isinstance(info.value.last, InputRequiredResult)
        assert info.value.last.request_state == "s3"

    await run(Server(), {"tools/call": keeps_asking}, body, elicitation_callback=elicit)
    assert count == 3


async def test_deadline_bounds_the_whole_call() -> None:
    started = anyio.Event()

    async def asks(_: JSON) -> JSON:
        return ask("s", region=elicit_request())

    async def stuck(ctx: ClientRequestContext, params: Any) -> ElicitResult:
        started.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async def body(client: Client) -> None:
        with pytest.raises(DeadlineExceededError) as info:
            await client.call_tool("t", timeout=0.2)
        assert info.value.timeout == 0.2
        assert isinstance(info.value, TimeoutError)  # `except TimeoutError:` catches it
        assert started.is_set()

    await run(Server(), {"tools/call": asks}, body, elicitation_callback=stuck)


async def test_callback_exception_reaches_the_caller_as_itself() -> None:
    class Interrupt(Exception):
        pass

    async def asks(_: JSON) -> JSON:
        return ask("s", a=elicit_request("a"), b=elicit_request("b"))

    async def elicit(ctx: ClientRequestContext, params: Any) -> ElicitResult:
        if ctx.key == "b":
            raise Interrupt
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async def body(client: Client) -> None:
        with pytest.raises(Interrupt):
            await client.call_tool("t")

    await run(Server(), {"tools/call": asks}, body, elicitation_callback=elicit)


async def test_call_tool_resumes_from_seeded_state() -> None:
    async def resume(request: JSON) -> JSON:
        params = request["params"]
        assert params["requestState"] == "persisted"
        assert params["inputResponses"] == {
            "region": {"action": "accept", "content": {"region": "x"}}
        }
        return TOOL_RESULT

    async def body(client: Client) -> None:
        result = await client.call_tool(
            "t",
            input_responses={"region": ElicitResult(action="accept", content={"region": "x"})},
            request_state="persisted",
        )
        assert not result.is_error

    await run(Server(), {"tools/call": resume}, body)


async def test_prompts_and_resources_run_the_same_loop() -> None:
    async def elicit(ctx: ClientRequestContext, params: Any) -> ElicitResult:
        return ElicitResult(action="accept", content={"audience": ctx.method or ""})

    async def prompt(request: JSON) -> JSON:
        responses = request["params"].get("inputResponses")
        if not responses:
            return ask(None, audience=elicit_request())
        text = responses["audience"]["content"]["audience"]
        return {"messages": [{"role": "user", "content": {"type": "text", "text": text}}]}

    async def resource(request: JSON) -> JSON:
        params = request["params"]
        if "inputResponses" not in params:
            return ask("r", audience=elicit_request())
        return {
            "contents": [
                {
                    "uri": params["uri"],
                    "text": params["inputResponses"]["audience"]["content"]["audience"],
                }
            ]
        }

    async def body(client: Client) -> None:
        got = await client.get_prompt("brief", {"x": "y"})
        assert got.messages[0].content.text == "prompts/get"  # type: ignore[union-attr]
        read = await client.read_resource("res://doc")
        assert read.contents[0].text == "resources/read"  # type: ignore[union-attr]

    await run(
        Server(),
        {"prompts/get": prompt, "resources/read": resource},
        body,
        elicitation_callback=elicit,
    )


async def test_legacy_back_channel_through_client() -> None:
    server = Server()

    async def elicit(ctx: ClientRequestContext, params: Any) -> ElicitResult:
        assert ctx.protocol_version == LEGACY and ctx.request_id is not None
        return ElicitResult(action="accept", content={"ok": True})

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:

            async def script() -> None:
                peer = server.peer
                await peer.handshake(LEGACY)
                call = await peer.expect_request("tools/call")
                await peer.send_request("elicitation/create", elicit_request()["params"])
                reply = await peer.receive()
                assert reply["result"]["content"] == {"ok": True}
                await peer.respond(call, TOOL_RESULT)

            tg.start_soon(script)
            async with Client(server, mode="legacy", elicitation_callback=elicit) as client:
                result = await client.call_tool("t")
                assert not result.is_error
    await server.peer.transport.aclose()


def test_initialize_result_helper_is_valid() -> None:
    assert initialize_result()["protocolVersion"] == LEGACY


async def test_limits_strict_results_and_timeouts_are_typed() -> None:
    from mrtr.errors import InputLimitExceededError, RequestTimeoutError
    from mrtr.flow._driver import InputLimits

    async def two_requests(_: JSON) -> JSON:
        return ask("s", a=elicit_request("a"), b=elicit_request("b"))

    async def neither(_: JSON) -> JSON:
        return {"resultType": "input_required"}

    async def unknown_kind(_: JSON) -> JSON:
        return ask("s", x={"method": "files/delete", "params": {}})

    never = anyio.Event()

    async def hangs(_: JSON) -> JSON:
        await never.wait()
        return TOOL_RESULT

    async def elicit(ctx: ClientRequestContext, params: Any) -> ElicitResult:
        return ElicitResult(action="accept", content={})

    async def body(client: Client) -> None:
        with pytest.raises(InputLimitExceededError) as info:
            await client.call_tool("two")
        assert info.value.maximum == 1
        with pytest.raises(ProtocolError):
            await client.call_tool("neither")
        with pytest.raises(ProtocolError):
            await client.call_tool("unknown")
        with pytest.raises(RequestTimeoutError):
            await client.call_tool("hangs", read_timeout_seconds=0.1)
        with pytest.raises(DeadlineExceededError):
            await client.call_tool("hangs", timeout=0.1)
        with anyio.move_on_after(0.1) as scope:  # the caller's own cancellation stays that
            await client.call_tool("hangs")
        assert scope.cancelled_caught

    async def route(request: JSON) -> JSON:
        handler = {"two": two_requests, "neither": neither, "unknown": unknown_kind}.get(
            request["params"]["name"], hangs
        )
        return await handler(request)

    await run(
        Server(),
        {"tools/call": route},
        body,
        elicitation_callback=elicit,
        input_limits=InputLimits(max_input_requests=1),
    )


async def test_url_mode_and_capability_override() -> None:
    urls: list[str] = []

    async def elicit(ctx: ClientRequestContext, params: Any) -> ElicitResult:
        urls.append(params.url)
        return ElicitResult(action="accept")

    async def asks_url(request: JSON) -> JSON:
        caps = request["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]
        assert caps == {"elicitation": {"form": {}, "url": {}}}
        if request["params"].get("inputResponses"):
            return TOOL_RESULT
        url = "https://example.com/consent?token=abc#frag"
        return ask(
            None,
            login={
                "method": "elicitation/create",
                "params": {"mode": "url", "message": "Log in", "url": url, "elicitationId": "e1"},
            },
        )

    async def body(client: Client) -> None:
        await client.call_tool("login")

    await run(
        Server(),
        {"tools/call": asks_url},
        body,
        elicitation_callback=elicit,
        elicitation_url_mode=True,
    )
    assert urls == ["https://example.com/consent?token=abc#frag"]

    server = Server()

    async def manual(client: Client) -> None:
        assert client.session.client_capabilities == {"roots": {}}

    await run(server, {}, manual, capabilities={"roots": {}})
    caps = server.peer.received[0]["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]
    assert caps == {"roots": {}}


STDIO_SERVER = """
import json, sys
def reply(request, result):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}) + "\\n")
    sys.stdout.flush()
discover = json.loads(sys.stdin.readline())
reply(discover, {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}})
listing = json.loads(sys.stdin.readline())
reply(listing, {"tools": [{"name": "crash", "inputSchema": {"type": "object"}}]})
json.loads(sys.stdin.readline())
sys.exit(3)
"""


async def test_stdio_server_dying_mid_call_fails_the_call() -> None:
    from mrtr.transports import StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=["-c", STDIO_SERVER])
    with anyio.fail_after(60):
        async with Client(params) as client:
            assert client.protocol_version == MODERN
            assert [tool.name for tool in (await client.list_tools()).tools] == ["crash"]
            with pytest.raises(TransportError, match="3"):
                await client.call_tool("crash")
            with pytest.raises(TransportError):
                await client.list_tools()


async def test_client_wrappers_and_a_plain_transport_target() -> None:
    async def prompts(request: JSON) -> JSON:
        return {"prompts": [{"name": "p"}]}

    async def resources(request: JSON) -> JSON:
        return {"resources": [{"uri": "res://a", "name": "a"}]}

    async def templates(request: JSON) -> JSON:
        return {"resourceTemplates": [{"uriTemplate": "res://{x}", "name": "t"}]}

    async def complete(request: JSON) -> JSON:
        return {"completion": {"values": ["v"]}}

    async def ping(request: JSON) -> JSON:
        return {}

    server = Server()

    async def body(client: Client) -> None:
        assert [p.name async for p in client.iter_prompts()] == ["p"]
        assert [r.uri async for r in client.iter_resources()] == ["res://a"]
        assert [t.name async for t in client.iter_resource_templates()] == ["t"]
        assert (await client.list_prompts()).prompts[0].name == "p"
        assert (await client.list_resources()).resources[0].name == "a"
        assert (await client.list_resource_templates()).resource_templates[0].name == "t"
        result = await client.complete(
            {"type": "ref/prompt", "name": "p"}, {"name": "a", "value": ""}
        )
        assert result.completion.values == ["v"]
        assert client.session.transport is server.client_end

    handlers = {
        "prompts/list": prompts,
        "resources/list": resources,
        "resources/templates/list": templates,
        "completion/complete": complete,
        "ping": ping,
    }
    # a Transport object itself is a valid target
    client = Client(server.client_end)
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(partial(server.peer.serve, handlers, version=LEGACY))
            async with client:
                await body(client)
                await client.send_ping()
            tg.cancel_scope.cancel()
    await server.peer.transport.aclose()


async def test_url_mode_request_without_url_mode_is_refused_unseen() -> None:
    called: list[Any] = []

    async def elicit(ctx: ClientRequestContext, params: Any) -> ElicitResult:
        called.append(params)
        return ElicitResult(action="accept")

    async def asks_url(request: JSON) -> JSON:
        return ask(
            None,
            login={
                "method": "elicitation/create",
                "params": {"mode": "url", "message": "m", "url": "https://x", "elicitationId": "e"},
            },
        )

    async def body(client: Client) -> None:
        with pytest.raises(MCPError, match="URL-mode elicitation not supported"):
            await client.call_tool("login")

    await run(Server(), {"tools/call": asks_url}, body, elicitation_callback=elicit)
    assert called == []


@pytest.mark.parametrize("name", ["client_auto_loop", "client_manual_loop"])
async def test_examples_run(
    name: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import importlib

    monkeypatch.syspath_prepend(str(EXAMPLES))
    module = importlib.import_module(name)
    with anyio.fail_after(60):
        await module.main()
    assert "Provisioned 'orders' in eu-west-1." in capsys.readouterr().out
