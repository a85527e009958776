"""The server core, message by message (no transport)."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from mrtr import Client, MCPError
from mrtr.server import UNSEALED, Principal, RequestStateSecurity, Server
from mrtr.server._core._connection import ServerConnection

from ._servers import ALL_CAPS, MODERN, make_server, request

pytestmark = pytest.mark.anyio

FROZEN = {
    "code": -32602,
    "message": "Invalid or expired requestState",
    "data": {"reason": "invalid_request_state"},  # as the official SDK answers
}
KEY = b"k" * 32


class Recorder:
    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    async def __call__(self, message: dict[str, Any]) -> None:
        self.sent.append(message)


async def ask(
    conn: ServerConnection,
    message: dict[str, Any],
    *,
    principal: Principal | None = None,
    emit: Recorder | None = None,
) -> dict[str, Any]:
    response = await conn.handle(message, emit=emit or Recorder(), principal=principal)
    assert response is not None
    assert response["jsonrpc"] == "2.0"
    return response


def call(
    name: str,
    arguments: dict[str, Any] | None = None,
    *,
    responses: dict[str, Any] | None = None,
    state: str | None = None,
    id: int = 1,
    **kw: Any,
) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name}
    if arguments is not None:
        params["arguments"] = arguments
    if responses is not None:
        params["inputResponses"] = responses
    if state is not None:
        params["requestState"] = state
    return request("tools/call", params, id=id, **kw)


REGION = {"region": {"action": "accept", "content": {"region": "eu-west-1"}}}


async def test_discover() -> None:
    response = await ask(make_server().connection(), request("server/discover"))
    result = response["result"]
    assert result["supportedVersions"][0] == MODERN
    assert result["capabilities"]["tools"] == {"listChanged": True}
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"] == {
        "name": "Provisioner",
        "version": "1.2.3",
    }
    assert result["resultType"] == "complete"
    assert {"ttlMs", "cacheScope"} <= result.keys()


async def test_unknown_version_is_32022() -> None:
    conn = make_server().connection()
    for version in ("2099-01-01", "2025-11-25"):
        message = request("tools/list")
        message["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = version
        error = (await ask(conn, message))["error"]
        assert error["code"] == -32022
        assert error["data"]["requested"] == version
        assert MODERN in error["data"]["supported"]


async def test_missing_capabilities_is_invalid_params() -> None:
    message = request("tools/list")
    del message["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]
    error = (await ask(make_server().connection(), message))["error"]
    assert error["code"] == -32602
    assert "clientCapabilities" in error["message"]


async def test_a_request_without_a_protocol_version_is_invalid_params() -> None:
    # neither an initialized legacy session nor the modern envelope: the params are wrong
    bare = {"jsonrpc": "2.0", "id": 7, "method": "server/discover", "params": {}}
    error = (await ask(make_server().connection(), bare))["error"]
    assert error["code"] == -32602
    no_version = request("server/discover", id=8)
    del no_version["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"]
    response = await ask(make_server().connection(), no_version)
    assert response["error"]["code"] == -32602 and response["id"] == 8


async def test_initialize_with_the_modern_envelope_is_method_not_found() -> None:
    conn = make_server().connection()
    error = (await ask(conn, request("initialize")))["error"]
    assert error["code"] == -32601
    # the connection was not turned into a legacy session by it
    assert (await ask(conn, request("tools/list")))["result"]["tools"]


async def test_completion_answers_through_on_complete() -> None:
    from mrtr.types import CompleteRequestParams, CompleteResult, Completion

    seen: list[CompleteRequestParams] = []

    async def complete(ctx: Any, params: CompleteRequestParams) -> CompleteResult:
        seen.append(params)
        values = [v for v in ("red", "green", "blue") if v.startswith(params.argument.value)]
        return CompleteResult(completion=Completion(values=values, total=len(values)))

    server = Server("s", on_complete=complete)
    assert server.capabilities()["completions"] == {}
    ref = {"type": "ref/prompt", "name": "colour"}
    message = request("completion/complete", {"ref": ref, "argument": {"name": "c", "value": "g"}})
    result = (await ask(server.connection(), message))["result"]
    assert result["completion"] == {"values": ["green"], "total": 1}
    assert result["resultType"] == "complete"
    assert seen[0].ref.name == "colour"  # type: ignore[union-attr]
    bad = request("completion/complete", {"ref": ref})
    assert (await ask(server.connection(), bad))["error"]["code"] == -32602


async def test_two_round_flow_with_sealed_state() -> None:
    conn = make_server().connection()
    first = (await ask(conn, call("provision", {"name": "orders"})))["result"]
    assert first["resultType"] == "input_required"
    assert first["inputRequests"]["region"]["method"] == "elicitation/create"
    token = first["requestState"]
    assert "provision-v1" not in token and token.startswith("m1.")
    done = await ask(
        conn, call("provision", {"name": "orders"}, responses=REGION, state=token, id=2)
    )
    assert done["id"] == 2
    assert done["result"]["resultType"] == "complete"
    assert done["result"]["content"][0]["text"] == "Provisioned 'orders' in eu-west-1."


async def test_state_only_rounds_are_resealed() -> None:
    conn = make_server().connection()
    r1 = (await ask(conn, call("wait")))["result"]
    r2 = (await ask(conn, call("wait", state=r1["requestState"])))["result"]
    assert r2["requestState"] != r1["requestState"]
    r3 = (await ask(conn, call("wait", state=r2["requestState"])))["result"]
    assert r3["content"][0]["text"] == "waited 2"


async def test_prompt_and_resource_template_flows() -> None:
    conn = make_server().connection()
    first = (await ask(conn, request("prompts/get", {"name": "briefing"})))["result"]
    answer = {"audience": {"action": "accept", "content": {"audience": "the board"}}}
    done = (
        await ask(
            conn,
            request(
                "prompts/get",
                {
                    "name": "briefing",
                    "inputResponses": answer,
                    "requestState": first["requestState"],
                },
            ),
        )
    )["result"]
    assert done["messages"][0]["content"]["text"] == "Write a briefing for the board."
    first = (await ask(conn, request("resources/read", {"uri": "secret://x"})))["result"]
    ok = {"ok": {"action": "accept", "content": {"ok": True}}}
    done = (
        await ask(
            conn,
            request(
                "resources/read",
                {"uri": "secret://x", "inputResponses": ok, "requestState": first["requestState"]},
            ),
        )
    )["result"]
    assert done["contents"][0]["text"] == "contents of secret://x"


@pytest.mark.parametrize(
    ("tool", "caps", "missing"),
    [
        ("provision", {}, {"elicitation": {"form": {}}}),
        ("provision", {"elicitation": {"url": {}}}, {"elicitation": {"form": {}}}),
        ("sign_in", {"elicitation": {"form": {}}}, {"elicitation": {"url": {}}}),
        ("sign_in", {"elicitation": {}}, {"elicitation": {"url": {}}}),
        ("summarize", {"roots": {}}, {"sampling": {}}),
        ("list_roots", {"sampling": {}}, {"roots": {}}),
    ],
)
async def test_missing_client_capability_is_32021(
    tool: str, caps: dict[str, Any], missing: dict[str, Any]
) -> None:
    error = (await ask(make_server().connection(), call(tool, {"name": "x"}, caps=caps)))["error"]
    assert error["code"] == -32021
    assert error["data"]["requiredCapabilities"] == missing
    # the message says what to declare, and why nothing was asked
    callback = {"elicitation": "elicitation_callback=", "sampling": "sampling_callback="}
    callback["roots"] = "list_roots_callback="
    assert callback[next(iter(missing))] in error["message"]
    assert f"capabilities={json.dumps(missing)}" in error["message"]
    assert "refuses before asking because the spec forbids" in error["message"]
    assert ("elicitation_url_mode=True" in error["message"]) == ("url" in str(missing))


async def test_a_client_without_callbacks_is_told_what_to_declare() -> None:
    async with Client(make_server()) as client:  # no callback: no capability declared
        with pytest.raises(MCPError) as refused:
            await client.call_tool("provision", {"name": "x"})
    assert refused.value.error.code == -32021
    assert refused.value.error.data == {"requiredCapabilities": {"elicitation": {"form": {}}}}
    assert "pass elicitation_callback= to the Client" in str(refused.value)
    assert 'capabilities={"elicitation": {"form": {}}}' in str(refused.value)


async def test_an_empty_elicitation_capability_means_form() -> None:
    result = (
        await ask(
            make_server().connection(), call("provision", {"name": "x"}, caps={"elicitation": {}})
        )
    )["result"]
    assert result["resultType"] == "input_required"


async def test_legacy_session() -> None:
    conn = make_server().connection()
    assert (await ask(conn, request("ping", modern=False)))["result"] == {}
    error = (await ask(conn, request("tools/list", modern=False)))["error"]
    assert error["code"] == -32602 and "initialize" in error["message"]
    init = await ask(
        conn,
        request(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "c", "version": "1"},
            },
            modern=False,
        ),
    )
    assert init["result"]["protocolVersion"] == "2025-11-25"
    assert init["result"]["serverInfo"]["name"] == "Provisioner"
    assert (
        await conn.handle(
            {"jsonrpc": "2.0", "method": "notifications/initialized"}, emit=Recorder()
        )
        is None
    )
    tools = (await ask(conn, request("tools/list", modern=False)))["result"]
    assert "resultType" not in tools and tools["tools"][0]["name"] == "provision"
    ok = (await ask(conn, call("legacy_safe", modern=False)))["result"]
    assert ok["content"][0]["text"] == "legacy_safe on 2025-11-25"
    bad = (await ask(conn, call("sign_in", modern=False)))["error"]  # InputRequiredResult
    assert bad == {"code": -32603, "message": "Handler returned an invalid result"}
    # the back-channel is checked against what initialize declared (nothing here)
    undeclared = (await ask(conn, call("provision", {"name": "x"}, modern=False)))["error"]
    assert undeclared["code"] == -32021
    # the era is settled: a modern envelope is refused on this connection
    assert (await ask(conn, request("tools/list")))["error"]["code"] == -32600
    assert (await ask(conn, request("logging/setLevel", {"level": "warning"}, modern=False)))[
        "result"
    ] == {}
    bad_level = await ask(conn, request("logging/setLevel", {"level": "loud"}, modern=False))
    assert bad_level["error"]["code"] == -32602


async def test_initialize_negotiates_a_legacy_version() -> None:
    conn = make_server().connection()
    init = await ask(
        conn,
        request(
            "initialize",
            {
                "protocolVersion": "2099-01-01",
                "capabilities": {},
                "clientInfo": {"name": "c", "version": "1"},
            },
            modern=False,
        ),
    )
    assert init["result"]["protocolVersion"] == "2025-11-25"
    error = (
        await ask(
            make_server().connection(), request("initialize", {"protocolVersion": 3}, modern=False)
        )
    )["error"]
    assert error["code"] == -32602


async def test_initialize_on_a_modern_connection_is_32022() -> None:
    conn = make_server().connection()
    await ask(conn, request("server/discover"))
    error = (
        await ask(
            conn,
            request(
                "initialize",
                {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "c", "version": "1"},
                },
                modern=False,
            ),
        )
    )["error"]
    assert error["code"] == -32022 and error["data"]["supported"] == [MODERN]


async def test_json_rpc_errors(caplog: pytest.LogCaptureFixture) -> None:
    conn = make_server().connection()
    assert (await ask(conn, request("nope/nope")))["error"]["code"] == -32601
    assert (await ask(conn, request("ping")))["error"]["code"] == -32601  # removed in 2026-07-28
    assert (await ask(conn, request("completion/complete")))["error"]["code"] == -32601
    missing_name = (await ask(conn, request("tools/call", {"arguments": {}})))["error"]
    assert missing_name["code"] == -32602 and "name" in missing_name["message"]
    bad_responses = (await ask(conn, call("provision", responses={"region": 5})))["error"]
    assert bad_responses["code"] == -32602
    assert (await ask(conn, {"jsonrpc": "1.0", "id": 3, "method": "x"}))["error"]["code"] == -32600
    no_method = await ask(conn, {"jsonrpc": "2.0", "id": 4})
    assert no_method["error"]["code"] == -32600 and no_method["id"] == 4
    bad_id = await ask(conn, {"jsonrpc": "2.0", "id": [1], "method": "tools/list"})
    assert bad_id["error"]["code"] == -32600 and bad_id["id"] is None
    assert (await ask(conn, {"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": [1]}))[
        "error"
    ]["code"] == -32600
    assert await conn.handle({"jsonrpc": "2.0", "id": 9, "result": {}}, emit=Recorder()) is None
    with caplog.at_level(logging.ERROR, logger="mrtr.server"):
        crash = (await ask(conn, call("crash")))["error"]
    assert crash == {"code": -32603, "message": "Internal error"}
    assert "secret internal detail" in caplog.text  # in the log, not on the wire


async def test_handler_mcp_error_passes_through() -> None:
    from mrtr.errors import MCPError
    from mrtr.types import CallToolResult

    async def refuse(ctx: Any, params: Any) -> CallToolResult:
        raise MCPError(-32042, "quota exceeded", {"retryAfter": 3})

    server = Server("s", on_call_tool=refuse)
    error = (await ask(server.connection(), call("x")))["error"]
    assert error == {"code": -32042, "message": "quota exceeded", "data": {"retryAfter": 3}}


async def test_invalid_results() -> None:
    from mrtr.types import GetPromptResult, InputRequiredResult

    async def wrong_type(ctx: Any, params: Any) -> Any:
        return GetPromptResult(messages=[])

    async def empty(ctx: Any, params: Any) -> Any:
        return InputRequiredResult()

    async def listing_asks(ctx: Any, params: Any) -> Any:
        return InputRequiredResult(request_state="x")

    server = Server("s", on_call_tool=wrong_type, on_get_prompt=empty, on_list_tools=listing_asks)
    conn = server.connection()
    invalid = {"code": -32603, "message": "Handler returned an invalid result"}
    assert (await ask(conn, call("x")))["error"] == invalid
    assert (await ask(conn, request("prompts/get", {"name": "p"})))["error"] == invalid
    assert (await ask(conn, request("tools/list")))["error"] == invalid
    # a method with no handler
    assert (await ask(conn, request("resources/read", {"uri": "a://b"})))["error"]["code"] == -32601


async def test_progress_and_log_notifications() -> None:
    conn = make_server().connection()
    emitted = Recorder()
    log_info: dict[str, Any] = {"io.modelcontextprotocol/logLevel": "info"}
    message = call("chatty", progressToken="tok", **log_info)
    result = (await ask(conn, message, emit=emitted))["result"]
    assert result["content"][0]["text"] == "done"
    methods = [m["method"] for m in emitted.sent]
    assert methods == ["notifications/progress", "notifications/message", "notifications/progress"]
    assert emitted.sent[0]["params"] == {
        "progressToken": "tok",
        "progress": 0.5,
        "total": 1.0,
        "message": "half",
    }
    assert emitted.sent[1]["params"] == {"level": "info", "data": {"step": 1}, "logger": "chatty"}
    # no progress token and no log level: nothing is sent
    quiet = Recorder()
    await ask(conn, call("chatty"), emit=quiet)
    assert quiet.sent == []


async def test_legacy_logs_follow_set_level() -> None:
    conn = make_server().connection()
    await ask(
        conn,
        request(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "c", "version": "1"},
            },
            modern=False,
        ),
    )
    everything = Recorder()
    await ask(conn, call("chatty", modern=False), emit=everything)
    assert [m["params"]["level"] for m in everything.sent] == ["info", "debug"]
    await ask(conn, request("logging/setLevel", {"level": "info"}, modern=False))
    filtered = Recorder()
    await ask(conn, call("chatty", modern=False), emit=filtered)
    assert [m["params"]["level"] for m in filtered.sent] == ["info"]


async def test_unsealed_passes_state_through() -> None:
    conn = make_server(security=UNSEALED).connection()
    first = (await ask(conn, call("provision", {"name": "orders"})))["result"]
    assert first["requestState"] == "provision-v1"
    done = await ask(
        conn, call("provision", {"name": "orders"}, responses=REGION, state="provision-v1")
    )
    assert "result" in done


def test_policy_needs_an_audience_or_a_real_name() -> None:
    with pytest.raises(ValueError, match="audience"):
        Server("  ", request_state_security=RequestStateSecurity(keys=[KEY]))
    Server("  ", request_state_security=RequestStateSecurity(keys=[KEY], audience="svc"))
    Server("")  # the default ephemeral policy is exempt: its key never leaves the process
    Server("", request_state_security=UNSEALED)
    with pytest.raises(TypeError, match="UNSEALED"):
        Server("s", request_state_security="none")  # type: ignore[arg-type]
    assert repr(UNSEALED) == "UNSEALED"


def test_capabilities_follow_handlers() -> None:
    assert Server("bare").capabilities() == {"logging": {}}


# --- the tamper matrix -------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


async def _mint(conn: ServerConnection, *, principal: Principal | None = None) -> str:
    result = (await ask(conn, call("provision", {"name": "orders"}), principal=principal))["result"]
    return str(result["requestState"])


async def _assert_frozen(
    conn: ServerConnection,
    message: dict[str, Any],
    caplog: pytest.LogCaptureFixture,
    reason: str,
    *,
    principal: Principal | None = None,
) -> None:
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="mrtr.server.request_state"):
        response = await ask(conn, message, principal=principal)
    assert response["error"] == FROZEN, response
    logged = [r.getMessage() for r in caplog.records if r.name == "mrtr.server.request_state"]
    assert any(reason in line for line in logged), logged


def _flip(token: str) -> str:
    i = len(token) // 2
    return token[:i] + ("A" if token[i] != "A" else "B") + token[i + 1 :]


async def test_tamper_matrix(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    server = make_server(security=RequestStateSecurity(keys=[KEY], clock=clock, ttl=60))
    conn = server.connection()
    token = await _mint(conn)

    def retry(
        state: str, name: str = "provision", arguments: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        return call(name, arguments or {"name": "orders"}, responses=REGION, state=state)

    await _assert_frozen(conn, retry(_flip(token)), caplog, "")
    await _assert_frozen(conn, retry(token[:-6]), caplog, "")
    await _assert_frozen(conn, retry(token, name="summarize"), caplog, "another request")
    await _assert_frozen(conn, retry(token, arguments={"name": "users"}), caplog, "another request")
    other_method = request(
        "prompts/get", {"name": "provision", "arguments": {"name": "orders"}, "requestState": token}
    )
    await _assert_frozen(conn, other_method, caplog, "another request")
    # state sent to a handler that never mints one (plain text, and a real token)
    await _assert_frozen(conn, call("summarize", state="anything"), caplog, "prefix")
    await _assert_frozen(conn, call("legacy_safe", state=token), caplog, "another request")
    not_a_string: Any = 12
    await _assert_frozen(
        conn, call("provision", {"name": "orders"}, state=not_a_string), caplog, "not a string"
    )
    # other audience, same key
    other_service = make_server(
        "Billing", security=RequestStateSecurity(keys=[KEY], clock=clock)
    ).connection()
    await _assert_frozen(other_service, retry(token), caplog, "audience")
    # unknown key, and a token from another process's ephemeral key
    await _assert_frozen(
        make_server(security=RequestStateSecurity(keys=[b"n" * 32])).connection(),
        retry(token),
        caplog,
        "unknown key",
    )
    await _assert_frozen(make_server().connection(), retry(token), caplog, "unknown key")
    # expired
    clock.now += 61
    await _assert_frozen(conn, retry(token), caplog, "expired")


async def test_principal_binding_through_the_server(caplog: pytest.LogCaptureFixture) -> None:
    conn = make_server(security=RequestStateSecurity(keys=[KEY])).connection()
    alice = Principal("app", issuer="https://idp", subject="alice")
    bob = Principal("app", issuer="https://idp", subject="bob")
    token = await _mint(conn, principal=alice)
    message = call("provision", {"name": "orders"}, responses=REGION, state=token)
    await _assert_frozen(conn, message, caplog, "principal", principal=bob)
    await _assert_frozen(conn, message, caplog, "principal", principal=None)
    assert "result" in await ask(conn, message, principal=alice)


async def test_custom_principal_binder() -> None:
    policy = RequestStateSecurity(
        keys=[KEY], bind_principal=lambda ctx: f"tenant-{ctx.client_info and ctx.client_info.name}"
    )
    conn = make_server(security=policy).connection()
    token = await _mint(conn)
    assert "result" in await ask(
        conn, call("provision", {"name": "orders"}, responses=REGION, state=token)
    )


async def test_shared_keys_across_instances_and_rotation() -> None:
    old, new = b"o" * 32, b"n" * 32
    one = make_server(security=RequestStateSecurity(keys=[old])).connection()
    token = await _mint(one)
    for keys in ([old, new], [new, old]):
        two = make_server(security=RequestStateSecurity(keys=keys)).connection()
        done = await ask(two, call("provision", {"name": "orders"}, responses=REGION, state=token))
        assert done["result"]["content"][0]["text"].startswith("Provisioned")
    retired = make_server(security=RequestStateSecurity(keys=[new])).connection()
    assert (
        await ask(retired, call("provision", {"name": "orders"}, responses=REGION, state=token))
    )["error"] == FROZEN


async def test_single_use_through_the_server() -> None:
    strict = RequestStateSecurity(keys=[KEY], single_use=True, keep_answers=False)
    conn = make_server(security=strict).connection()
    token = await _mint(conn)
    message = call("provision", {"name": "orders"}, responses=REGION, state=token)
    assert "result" in await ask(conn, message)
    assert (await ask(conn, message))["error"] == FROZEN
    lenient = make_server(security=RequestStateSecurity(keys=[KEY])).connection()
    token = await _mint(lenient)
    message = call("provision", {"name": "orders"}, responses=REGION, state=token)
    assert "result" in await ask(lenient, message)
    assert "result" in await ask(lenient, message)


async def test_single_use_keeps_the_answer_of_a_leg_for_a_resend() -> None:
    conn = make_server(security=RequestStateSecurity(keys=[KEY], single_use=True)).connection()
    minted = (await ask(conn, call("provision", {"name": "orders"})))["result"]
    assert minted["_meta"]["io.mrtr/replayable"] is True  # the client may re-send the next leg
    message = call("provision", {"name": "orders"}, responses=REGION, state=minted["requestState"])
    first = await ask(conn, message)
    assert "result" in first
    assert await ask(conn, message) == first  # the same answer, sent again
    other = {"region": {"action": "accept", "content": {"region": "us-east-1"}}}
    changed = call("provision", {"name": "orders"}, responses=other, state=minted["requestState"])
    assert (await ask(conn, changed))["error"] == FROZEN  # the state was spent by another leg
    strict = RequestStateSecurity(keys=[KEY], single_use=True, keep_answers=False)
    minted = await ask(
        make_server(security=strict).connection(), call("provision", {"name": "orders"})
    )
    assert "io.mrtr/replayable" not in minted["result"].get("_meta", {})


async def test_a_failing_codec_on_seal_is_an_internal_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Broken:
        def seal(self, payload: bytes) -> str:
            raise OSError("kms down")

        def unseal(self, token: str) -> bytes:
            raise OSError("kms down")

    conn = make_server(security=RequestStateSecurity(codec=Broken())).connection()
    with caplog.at_level(logging.ERROR):
        error = (await ask(conn, call("provision", {"name": "orders"})))["error"]
    assert error == {"code": -32603, "message": "Internal error"}
    assert "kms down" in caplog.text


_ = ALL_CAPS


async def test_a_failing_replay_store_is_an_internal_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class DownStore:
        async def claim(self, nonce: str, *, now: float, expires_at: float) -> bool:
            raise ConnectionError("redis down")

    policy = RequestStateSecurity(keys=[KEY], single_use=True, replay_store=DownStore())
    conn = make_server(security=policy).connection()
    token = await _mint(conn)
    with caplog.at_level(logging.ERROR):
        response = await ask(
            conn, call("provision", {"name": "orders"}, responses=REGION, state=token)
        )
    assert response["error"] == {"code": -32603, "message": "Internal error"}
    assert "redis down" in caplog.text


async def test_cacheable_results_get_the_required_hints() -> None:
    from mrtr.types import ListResourcesResult, Resource

    async def list_resources(ctx: Any, params: Any) -> ListResourcesResult:
        return ListResourcesResult(
            resources=[Resource(uri="a://1", name="one")], ttl_ms=5000, cache_scope="public"
        )

    server = make_server()
    server.on_list_resources = list_resources
    conn = server.connection()
    tools = (await ask(conn, request("tools/list")))["result"]
    assert (tools["ttlMs"], tools["cacheScope"]) == (0, "private")
    resources = (await ask(conn, request("resources/list")))["result"]
    assert (resources["ttlMs"], resources["cacheScope"]) == (5000, "public")
    legacy = server.connection()
    await ask(
        legacy,
        request(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "c", "version": "1"},
            },
            modern=False,
        ),
    )
    assert "ttlMs" not in (await ask(legacy, request("tools/list", modern=False)))["result"]
