"""Hostile HTTP peers against a real uvicorn on 127.0.0.1: rebinding, bad JSON, bad headers."""

from __future__ import annotations

import json
import logging
from typing import Any

import anyio
import httpx
import pytest

from ._hostile import SECRET, Tally, make_hostile_server, uvicorn_server
from ._servers import meta, request

pytestmark = pytest.mark.anyio

ACCEPT = "application/json, text/event-stream"

_DEBUG_LOGS: dict[str, Any] = {"io.modelcontextprotocol/logLevel": "debug"}


def strict_json(text: str) -> Any:
    """Parse as JSON proper: NaN and the infinities are not JSON."""

    def refuse(constant: str) -> Any:
        raise AssertionError(f"the server sent {constant}, which is not JSON")

    return json.loads(text, parse_constant=refuse)


def tool_call(name: str, *, id: Any = 1) -> dict[str, Any]:
    return request("tools/call", {"name": name, "arguments": {}}, id=id)


def modern_headers(method: str, name: str | None = None, **extra: str) -> dict[str, str]:
    headers = {
        "accept": ACCEPT,
        "content-type": "application/json",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": method,
    }
    if name is not None:
        headers["mcp-name"] = name
    headers.update(extra)
    return headers


async def test_dns_rebinding_is_refused_before_any_handler() -> None:
    tally = Tally()
    app = make_hostile_server(tally).streamable_http_app()
    with uvicorn_server(app) as port, anyio.fail_after(60):
        url = f"http://127.0.0.1:{port}/mcp"
        rebound = f"rebind.evil.example:{port}"
        body = json.dumps(tool_call("echo"))
        headers = modern_headers("tools/call", "echo")
        async with httpx.AsyncClient() as client:
            attack = await client.post(
                url,
                content=body,
                headers={**headers, "host": rebound, "origin": f"http://{rebound}"},
            )
            assert attack.status_code == 421
            assert strict_json(attack.text)["error"]["code"] == -32600
            host_only = await client.post(url, content=body, headers={**headers, "host": rebound})
            assert host_only.status_code == 421
            origin_only = await client.post(
                url, content=body, headers={**headers, "origin": "http://rebind.evil.example"}
            )
            assert origin_only.status_code == 403
            null_origin = await client.post(
                url, content=body, headers={**headers, "origin": "null"}
            )
            assert null_origin.status_code == 403
            assert tally.calls == []  # nothing ran
            for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}", "localhost"):
                local = await client.post(
                    url, content=body, headers={**headers, "host": host, "origin": f"http://{host}"}
                )
                assert local.status_code == 200, host
            assert tally.calls == ["echo"] * 4


async def test_allowed_hosts_and_origins_knobs() -> None:
    tally = Tally()
    app = make_hostile_server(tally).streamable_http_app(
        allowed_hosts=["mcp.example.com", "api.example.com:8443"],
        allowed_origins=["https://app.example.com"],
    )
    with uvicorn_server(app) as port, anyio.fail_after(60):
        url = f"http://127.0.0.1:{port}/mcp"
        body = json.dumps(tool_call("echo"))
        headers = modern_headers("tools/call", "echo")

        async def status(**extra: str) -> int:
            async with httpx.AsyncClient() as client:
                response = await client.post(url, content=body, headers={**headers, **extra})
                return response.status_code

        assert await status(host="mcp.example.com:9999") == 200  # any port
        assert await status(host="api.example.com:8443") == 200
        assert await status(host="api.example.com:8444") == 421  # that port only
        assert await status(host="mcp.example.com.evil.example") == 421
        assert await status(origin="https://app.example.com") == 200
        assert await status(origin="https://app.example.com.evil.example") == 403
        assert await status(host="mcp.example.com", origin="http://mcp.example.com") == 200
        assert tally.calls == ["echo"] * 4


@pytest.mark.parametrize(
    ("body", "code", "request_id"),
    [
        # a lone surrogate in a string that an error message echoes
        (b'{"jsonrpc":"2.0","id":7,"method":"x\\ud800"}', -32600, 7),
        (b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"\\udfff"}}', -32600, 7),
        # the same surrogate encoded as (invalid) UTF-8 bytes
        (b'{"jsonrpc":"2.0","id":7,"method":"x\xed\xa0\x80"}', -32700, None),
        (b"[" * 100_000 + b"]" * 100_000, -32700, None),
        (
            b'{"jsonrpc":"2.0","id":1,"method":"ping","params":'
            + b'{"a":' * 5000
            + b"1"
            + b"}" * 5001,
            -32700,
            None,
        ),
        (b'{"jsonrpc":"2.0","id":' + b"9" * 5000 + b',"method":"ping"}', -32700, None),
    ],
    ids=[
        "surrogate-method",
        "surrogate-name",
        "utf8-surrogate",
        "deep-list",
        "deep-object",
        "huge-integer",
    ],
)
async def test_unreadable_bodies_are_json_rpc_errors(
    body: bytes, code: int, request_id: Any
) -> None:
    app = make_hostile_server().streamable_http_app(max_message_size=16 * 1024 * 1024)
    with uvicorn_server(app) as port, anyio.fail_after(60):
        url = f"http://127.0.0.1:{port}/mcp"
        async with httpx.AsyncClient() as client:
            headers = modern_headers("tools/call", "echo")
            response = await client.post(url, content=body, headers=headers)
            assert response.status_code == 400
            assert response.headers["content-type"] == "application/json"
            error = strict_json(response.text)
            assert error["id"] == request_id and error["error"]["code"] == code
            after = await client.post(url, content=json.dumps(tool_call("echo")), headers=headers)
            assert strict_json(after.text)["result"]["content"][0]["text"] == "echo done"


async def test_the_nesting_cap_is_a_knob() -> None:
    app = make_hostile_server().streamable_http_app(max_json_depth=6)
    with uvicorn_server(app) as port, anyio.fail_after(60):
        url = f"http://127.0.0.1:{port}/mcp"
        async with httpx.AsyncClient() as client:
            headers = modern_headers("tools/call", "echo")
            call = tool_call("echo")
            # the message, its params, the arguments and three objects in them: 6 deep
            call["params"]["arguments"] = {"x": {"y": {"z": {}}}}
            served = await client.post(url, content=json.dumps(call), headers=headers)
            assert strict_json(served.text)["result"]["content"][0]["text"] == "echo done"
            call["params"]["arguments"] = {"x": {"y": {"z": {"w": {}}}}}  # 7 deep
            refused = await client.post(url, content=json.dumps(call), headers=headers)
            assert refused.status_code == 400
            error = strict_json(refused.text)
            assert error["id"] is None and error["error"]["code"] == -32700


@pytest.mark.parametrize(
    "raw_id", ["NaN", "Infinity", "-Infinity", '{"a":1}', "[1]", "1.5", "true"]
)
async def test_unusable_ids_are_echoed_as_null(raw_id: str) -> None:
    app = make_hostile_server().streamable_http_app()
    envelope = json.dumps({"_meta": meta()})
    with uvicorn_server(app) as port, anyio.fail_after(60):
        url = f"http://127.0.0.1:{port}/mcp"
        async with httpx.AsyncClient() as client:
            # the mirrored header is missing: answered on the HTTP layer's own error path
            mismatch = await client.post(
                url,
                content=f'{{"jsonrpc":"2.0","id":{raw_id},"method":"tools/list","params":{envelope}}}',
                headers={"accept": ACCEPT, "content-type": "application/json"},
            )
            assert mismatch.status_code == 400
            assert strict_json(mismatch.text)["id"] is None
            # a session that does not exist: another of its own paths
            unknown = await client.post(
                url,
                content=f'{{"jsonrpc":"2.0","id":{raw_id},"method":"ping"}}',
                headers={
                    "accept": ACCEPT,
                    "content-type": "application/json",
                    "mcp-session-id": "x",
                },
            )
            assert unknown.status_code == 404
            assert strict_json(unknown.text)["id"] is None


async def test_notifications_that_are_not_json_are_dropped() -> None:
    app = make_hostile_server().streamable_http_app()
    message = request(
        "tools/call",
        {"name": "nan", "arguments": {}},
        id=3,
        progressToken="p",
        **_DEBUG_LOGS,
    )
    with uvicorn_server(app) as port, anyio.fail_after(60):
        async with httpx.AsyncClient() as client:
            response = await client.post(
                f"http://127.0.0.1:{port}/mcp",
                content=json.dumps(message),
                headers=modern_headers("tools/call", "nan"),
            )
    assert response.headers["content-type"] == "text/event-stream"
    events = [
        strict_json(line[len("data: ") :])
        for line in response.text.splitlines()
        if line.startswith("data: ")
    ]
    assert [e.get("method", "response") for e in events] == ["notifications/progress", "response"]
    assert events[0]["params"]["progress"] == 1.0
    assert events[1]["id"] == 3 and events[1]["result"]["content"][0]["text"] == "nan done"


async def test_accept_without_json_is_406() -> None:
    tally = Tally()
    app = make_hostile_server(tally).streamable_http_app()
    with uvicorn_server(app) as port, anyio.fail_after(60):
        url = f"http://127.0.0.1:{port}/mcp"
        body = json.dumps(tool_call("echo"))
        async with httpx.AsyncClient() as client:
            for accept in ("text/html", "text/event-stream", "image/*"):
                headers = modern_headers("tools/call", "echo", accept=accept)
                response = await client.post(url, content=body, headers=headers)
                assert response.status_code == 406, accept
            assert tally.calls == []
            for accept in ("application/json", "*/*", "application/*;q=0.5"):
                headers = modern_headers("tools/call", "echo", accept=accept)
                response = await client.post(url, content=body, headers=headers)
                assert response.status_code == 200, accept


async def raw_exchange(port: int, head: bytes, body: bytes = b"") -> bytes:
    """Send a request head (and part of a body) on a raw socket, read the answer."""
    async with await anyio.connect_tcp("127.0.0.1", port) as stream:
        await stream.send(head + body)
        answer = b""
        while b"\r\n\r\n" not in answer:
            answer += await stream.receive()
        return answer


def post_head(port: int, content_length: int) -> bytes:
    return (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: {ACCEPT}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {content_length}\r\n\r\n"
    ).encode()


async def test_declared_oversized_body_is_refused_before_reading() -> None:
    app = make_hostile_server().streamable_http_app(max_message_size=1000)
    with uvicorn_server(app) as port, anyio.fail_after(60):
        # announces 1 GB and sends 10 bytes: the answer must not wait for the rest
        answer = await raw_exchange(port, post_head(port, 1_000_000_000), b'{"jsonrpc"')
        assert answer.startswith(b"HTTP/1.1 413 ")
        bad = await raw_exchange(port, post_head(port, 0).replace(b"Length: 0", b"Length: x1"))
        assert bad.startswith(b"HTTP/1.1 400 ")


async def test_body_sent_too_slowly_is_408() -> None:
    app = make_hostile_server().streamable_http_app(body_timeout=0.5)
    with uvicorn_server(app) as port, anyio.fail_after(60):
        answer = await raw_exchange(port, post_head(port, 100), b'{"jsonrpc":')
        assert answer.startswith(b"HTTP/1.1 408 ")


async def test_handler_exception_is_logged_at_the_chosen_level_never_sent(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = make_hostile_server(handler_error_log_level=logging.WARNING)
    app = server.streamable_http_app()
    with (
        caplog.at_level(logging.DEBUG, logger="mrtr.server"),
        uvicorn_server(app) as port,
        anyio.fail_after(60),
    ):
        async with httpx.AsyncClient() as client:
            response = await client.post(
                f"http://127.0.0.1:{port}/mcp",
                content=json.dumps(tool_call("boom")),
                headers=modern_headers("tools/call", "boom"),
            )
    assert response.status_code == 500
    assert strict_json(response.text)["error"] == {"code": -32603, "message": "Internal error"}
    assert SECRET not in response.text
    records = [r for r in caplog.records if r.name == "mrtr.server" and r.exc_info]
    assert [r.levelno for r in records] == [logging.WARNING]
    assert records[0].exc_info is not None and SECRET in str(records[0].exc_info[1])


def test_run_http_sets_uvicorn_limits_and_accepts_its_own_host(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from mrtr.server._http._drain import DrainingServer

    seen: dict[str, Any] = {}

    def fake_run(server: DrainingServer) -> None:
        config = server.config
        seen.update(
            app=config.app,
            host=config.host,
            port=config.port,
            limit_concurrency=config.limit_concurrency,
            timeout_keep_alive=config.timeout_keep_alive,
            timeout_graceful_shutdown=config.timeout_graceful_shutdown,
        )

    monkeypatch.setattr(DrainingServer, "run", fake_run)
    make_hostile_server().run_http(host="fe80::1", port=1234, allowed_hosts=["mcp.example.com"])
    assert seen["host"] == "fe80::1" and seen["port"] == 1234
    assert seen["limit_concurrency"] == 1000
    assert seen["timeout_keep_alive"] == 5
    assert seen["timeout_graceful_shutdown"] == 10
    policy = seen["app"]._origins
    assert policy.host_allowed("[fe80::1]:1234", None)
    assert policy.host_allowed("mcp.example.com", None)
    assert not policy.host_allowed("rebind.evil.example", None)
    make_hostile_server().run_http(host="0.0.0.0")
    assert not seen["app"]._origins.host_allowed("0.0.0.0", None)

    async def nobody(token: str) -> None:
        return None

    make_hostile_server().run_http(token_verifier=nobody)  # wrapped: it drains too
    assert type(seen["app"]).__name__ == "ProtectedResourceApp"
