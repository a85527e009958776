"""Operating a fleet: keys from the environment, the ephemeral-key warning, probes, spans."""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import MutableMapping
from typing import Any

import anyio
import httpx
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mrtr import Client, MCPError
from mrtr.errors import InvalidRequestState
from mrtr.server import RedisNotificationBus, RequestBinding, RequestStateSecurity, Server
from tests.server._hostile import uvicorn_server

pytestmark = pytest.mark.anyio

BINDING = RequestBinding.of("tools/call", {"name": "t", "arguments": {}})


def _seal(policy: RequestStateSecurity) -> str:
    return policy.seal_state("s", binding=BINDING, principal=None, audience="a")


async def _open(policy: RequestStateSecurity, token: str) -> str:
    return await policy.open_state(token, binding=BINDING, principal=None, audience="a")


async def test_keys_from_the_environment_rotate_like_keys(
    caplog: pytest.LogCaptureFixture,
) -> None:
    old, new = secrets.token_hex(32), secrets.token_hex(32)
    with caplog.at_level(logging.INFO, logger="mrtr.server.request_state"):
        phase_two = RequestStateSecurity.from_env(
            "FLEET_KEYS", environ={"FLEET_KEYS": f"2026-q3:{new}, 2026-q2:{old}"}, ttl=900
        )
    assert "sealing with 2026-q3, also opening 2026-q2" in caplog.text
    assert new not in caplog.text and old not in caplog.text
    assert phase_two.ttl == 900
    phase_one = RequestStateSecurity.from_env(environ={"MRTR_KEYS": f"{old},{new}"})
    # what the old ring sealed, the new one opens; not the other way before phase one
    assert await _open(phase_two, _seal(phase_one)) == "s"
    retired = RequestStateSecurity.from_env(environ={"MRTR_KEYS": old})
    with pytest.raises(InvalidRequestState):
        await _open(retired, _seal(phase_two))


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("", "unset or empty"),
        ("label:" + "ab" * 31, "31 bytes; at least 32"),
        ("zz" * 32, "not hex"),
    ],
)
def test_bad_keys_in_the_environment_are_refused_at_start(value: str, message: str) -> None:
    with pytest.raises(ValueError, match=message) as refused:
        RequestStateSecurity.from_env(environ={"MRTR_KEYS": value})
    assert "ab" * 31 not in str(refused.value)


def test_a_fleet_server_on_the_process_local_key_is_warned_about(
    caplog: pytest.LogCaptureFixture,
) -> None:
    import redis

    from mrtr.server import RedisEventStore

    dead = redis.Redis(host="127.0.0.1", port=1)
    with caplog.at_level(logging.WARNING, logger="mrtr.server.request_state"):
        Server("fleet", notification_bus=RedisNotificationBus(dead))
    assert "shares a notification bus" in caplog.text
    caplog.clear()
    keyed = RequestStateSecurity(keys=[secrets.token_bytes(32)])
    with caplog.at_level(logging.WARNING, logger="mrtr.server.request_state"):
        Server("fleet", notification_bus=RedisNotificationBus(dead), request_state_security=keyed)
        Server("fleet", request_state_security=keyed).streamable_http_app(
            event_store=RedisEventStore(dead)
        )
    assert caplog.text == ""
    with caplog.at_level(logging.WARNING, logger="mrtr.server.request_state"):
        Server("fleet").streamable_http_app(event_store=RedisEventStore(dead))
    assert "shares an event store" in caplog.text


async def test_probes_answer_any_host_and_readiness_follows_the_lifespan() -> None:
    server = Server("fleet", instance_id="eu-1")
    with uvicorn_server(server.streamable_http_app()) as port:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
            alive = await http.get("/healthz", headers={"host": "10.0.0.7:8000"})
            ready = await http.get("/readyz", headers={"host": "10.0.0.7:8000"})
            mcp = await http.post("/mcp", headers={"host": "10.0.0.7:8000"}, json={})
    assert (alive.status_code, alive.json()) == (200, {"status": "alive"})  # nothing more
    assert (ready.status_code, ready.json()["status"]) == (200, "ready")
    assert mcp.status_code == 421  # the MCP endpoint still checks the Host


async def test_readiness_is_503_before_startup_and_from_shutdown_on() -> None:
    app = Server("fleet").streamable_http_app()
    to_app, from_test = anyio.create_memory_object_stream[MutableMapping[str, Any]](4)
    to_test, from_app = anyio.create_memory_object_stream[MutableMapping[str, Any]](4)

    async def probe() -> int:
        sent: list[MutableMapping[str, Any]] = []

        async def receive() -> MutableMapping[str, Any]:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: MutableMapping[str, Any]) -> None:
            sent.append(message)

        scope: MutableMapping[str, Any] = {
            "type": "http",
            "method": "GET",
            "path": "/readyz",
            "headers": [(b"host", b"probe")],
            "query_string": b"",
        }
        await app(scope, receive, send)
        start = sent[0]
        assert json.loads(sent[-1]["body"])["status"]
        return int(start["status"])

    with anyio.fail_after(30):
        async with to_app, from_test, to_test, from_app, anyio.create_task_group() as tg:
            lifespan: MutableMapping[str, Any] = {"type": "lifespan"}
            tg.start_soon(app, lifespan, from_test.receive, to_test.send)
            await anyio.wait_all_tasks_blocked()
            assert await probe() == 503  # starting
            await to_app.send({"type": "lifespan.startup"})
            assert (await from_app.receive())["type"] == "lifespan.startup.complete"
            assert await probe() == 200
            await to_app.send({"type": "lifespan.shutdown"})
            assert (await from_app.receive())["type"] == "lifespan.shutdown.complete"
            assert await probe() == 503  # stopping


async def test_every_span_names_the_instance() -> None:
    exporter = InMemorySpanExporter()
    tracer = TracerProvider()
    tracer.add_span_processor(SimpleSpanProcessor(exporter))
    server = Server("fleet", instance_id="eu-2", tracer_provider=tracer)
    async with Client(server, mode="2026-07-28", tracing=False) as client:
        with pytest.raises(MCPError):  # no tools: a failed request is a span too
            await client.list_tools()
    spans = exporter.get_finished_spans()
    assert spans and all(
        s.attributes and s.attributes["service.instance.id"] == "eu-2" for s in spans
    )


def test_the_instance_id_defaults_to_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MRTR_INSTANCE_ID", "pod-7")
    assert Server("fleet").instance_id == "pod-7"
    monkeypatch.delenv("MRTR_INSTANCE_ID")
    assert ":" in Server("fleet").instance_id  # hostname:pid
