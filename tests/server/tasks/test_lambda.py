"""The server behind an AWS Lambda handler, fed API Gateway HTTP API (payload 2.0) events.

Every leg is one invocation of a handler; a "cold container" is a fresh handler built
from a fresh app (as a new Lambda container imports the module again). What the
containers share is real: the keys, a redis-server for single-use states and tasks, and a
`TaskWorker` (a thread with its own event loop, as a worker process would be) that runs
the task bodies the invocations only create.
"""

from __future__ import annotations

import asyncio
import base64
import json
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import anyio
import anyio.from_thread
import anyio.to_thread
import httpx
import pytest
from pydantic import BaseModel

from mrtr.server import (
    AcceptedElicitation,
    Context,
    Elicit,
    LambdaHandler,
    MCPServer,
    RedisNotificationBus,
    RedisReplayStore,
    RedisTaskStore,
    RequestStateSecurity,
    TaskRunner,
    TaskWorker,
    lambda_handler,
)
from mrtr.types import TASKS_EXTENSION
from tests.paused.conftest import redis_url  # noqa: F401 - the session's redis-server

MODERN = "2026-07-28"
KEY = bytes(range(32))
HOST = "abc123.execute-api.eu-west-1.amazonaws.com"
CAPS: dict[str, Any] = {"elicitation": {}, "extensions": {TASKS_EXTENSION: {}}}


class Ok(BaseModel):
    ok: bool


class Memo(BaseModel):
    text: str


def build(url: str, prefix: str, *, run_bodies: bool = False) -> MCPServer:
    """What each container (and the worker) imports: the same app, shared parts in Redis."""
    import redis

    client: Any = redis.Redis.from_url(url, socket_timeout=10)
    security = RequestStateSecurity(
        keys=[KEY],
        single_use=True,
        replay_store=RedisReplayStore(client, prefix=f"{prefix}:replay"),
    )
    runner = TaskRunner(RedisTaskStore(client, prefix=f"{prefix}:tasks"), run_bodies=run_bodies)
    bus = RedisNotificationBus(client, stream=f"{prefix}:changes", block_ms=100)
    app = MCPServer("lambda", request_state_security=security, tasks=runner, notification_bus=bus)

    @app.tool()
    async def retool() -> str:
        """Changes the tool list: the instances' listen streams hear of it through Redis."""
        await app.notify_tools_changed()
        return "changed"

    @app.tool()
    async def transfer(ctx: Context, call_id: str, amount: int) -> str:
        """Asks twice (confirm, then a memo), then pays once."""
        confirm = await ctx.ask(Elicit(f"Transfer {amount}?", Ok, key="confirm"))
        if not (isinstance(confirm, AcceptedElicitation) and confirm.data.ok):
            return "not transferred"
        memo = await ctx.ask(Elicit("A memo?", Memo, key="memo"))
        assert isinstance(memo, AcceptedElicitation)
        if ctx.once("pay"):
            client.incr(f"{prefix}:effects:{call_id}")
        return f"transferred {amount}: {memo.data.text}"

    @app.tool(task="required")
    async def report(ctx: Context, call_id: str) -> str:
        """A task that asks midway, then publishes once."""
        answer = await ctx.ask(Elicit("Publish the report?", Ok, key="publish"))
        assert isinstance(answer, AcceptedElicitation)
        if answer.data.ok and ctx.once("publish"):
            client.incr(f"{prefix}:effects:{call_id}")
        return f"published={answer.data.ok}"

    return app


def event(
    message: dict[str, Any] | None,
    *,
    method: str = "POST",
    path: str = "/mcp",
    headers: dict[str, str] | None = None,
    encode: bool = False,
) -> dict[str, Any]:
    """An API Gateway HTTP API event, payload format 2.0, as AWS documents it."""
    raw = None if message is None else json.dumps(message)
    if raw is not None and encode:
        raw = base64.b64encode(raw.encode()).decode()
    now = time.time()
    return {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": "",
        "headers": {
            "accept": "application/json, text/event-stream",
            "content-type": "application/json",
            "host": HOST,
            "user-agent": "mrtr-tests",
            "x-forwarded-for": "198.51.100.7",
            "x-forwarded-port": "443",
            "x-forwarded-proto": "https",
            **(headers or {}),
        },
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "abc123",
            "domainName": HOST,
            "domainPrefix": "abc123",
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": "198.51.100.7",
                "userAgent": "mrtr-tests",
            },
            "requestId": uuid.uuid4().hex,
            "routeKey": "$default",
            "stage": "$default",
            "time": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now)),
            "timeEpoch": int(now * 1000),
        },
        "body": raw,
        "isBase64Encoded": encode,
    }


class LambdaContext:
    """The parts of the Lambda context object a handler may read."""

    function_name = "mrtr-test"
    memory_limit_in_mb = 512
    aws_request_id = "req"

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


def rpc(
    handler: LambdaHandler, method: str, params: dict[str, Any], *, name: str | None = None
) -> tuple[int, dict[str, Any]]:
    """One modern request as one invocation: its status and JSON-RPC response."""
    params = {**params, "_meta": {f"io.modelcontextprotocol/{k}": v for k, v in _META.items()}}
    headers = {"mcp-protocol-version": MODERN, "mcp-method": method}
    if name is not None:
        headers["mcp-name"] = name
    message = {"jsonrpc": "2.0", "id": uuid.uuid4().hex[:8], "method": method, "params": params}
    answer = handler(event(message, headers=headers), LambdaContext())
    return answer["statusCode"], json.loads(answer["body"])


_META = {"protocolVersion": MODERN, "clientCapabilities": CAPS}


def accept(**content: Any) -> dict[str, Any]:
    return {"action": "accept", "content": content}


@pytest.fixture
def fleet(redis_url: str) -> Iterator[tuple[Callable[[], LambdaHandler], Any, str]]:  # noqa: F811
    """Cold containers on demand (each a fresh app and handler), Redis, the key prefix."""
    import redis

    prefix = f"l{uuid.uuid4().hex[:10]}"
    made: list[LambdaHandler] = []

    def cold() -> LambdaHandler:
        made.append(lambda_handler(build(redis_url, prefix), allowed_hosts=[HOST]))
        return made[-1]

    client = redis.Redis.from_url(redis_url, socket_timeout=10)
    try:
        yield cold, client, prefix
    finally:
        for handler in made:
            handler.close()
        client.close()


def test_a_call_that_asks_twice_runs_across_cold_containers(
    fleet: tuple[Callable[[], LambdaHandler], Any, str],
) -> None:
    cold, redis_client, prefix = fleet
    first = cold()
    call = {"name": "transfer", "arguments": {"call_id": "c1", "amount": 5}}
    status, leg1 = rpc(first, "tools/call", call, name="transfer")
    assert status == 200 and leg1["result"]["resultType"] == "input_required"
    assert list(leg1["result"]["inputRequests"]) == ["confirm"]
    # the second leg lands on a container that never saw the call
    second = cold()
    status, leg2 = rpc(
        second,
        "tools/call",
        {
            **call,
            "inputResponses": {"confirm": accept(ok=True)},
            "requestState": leg1["result"]["requestState"],
        },
        name="transfer",
    )
    assert status == 200 and list(leg2["result"]["inputRequests"]) == ["memo"]
    final = {
        **call,
        "inputResponses": {"memo": accept(text="rent")},
        "requestState": leg2["result"]["requestState"],
    }
    status, leg3 = rpc(first, "tools/call", final, name="transfer")  # back on a warm one
    assert status == 200, leg3
    assert leg3["result"]["content"][0]["text"] == "transferred 5: rent"
    # the answer was lost: the same final leg, re-sent to a third container, gets the
    # same answer from the shared replay store and pays nothing again
    status, again = rpc(cold(), "tools/call", final, name="transfer")
    assert again["result"]["content"] == leg3["result"]["content"]
    assert int(redis_client.get(f"{prefix}:effects:c1")) == 1
    # an earlier leg is single-use fleet-wide: its state, replayed with other answers,
    # is refused by yet another container
    status, replayed = rpc(
        cold(),
        "tools/call",
        {
            **call,
            "inputResponses": {"confirm": accept(ok=False)},
            "requestState": leg1["result"]["requestState"],
        },
        name="transfer",
    )
    assert replayed["error"]["code"] == -32602


def test_a_change_reaches_the_bus_before_the_invocation_returns(
    fleet: tuple[Callable[[], LambdaHandler], Any, str],
) -> None:
    cold, redis_client, prefix = fleet
    status, answer = rpc(cold(), "tools/call", {"name": "retool", "arguments": {}}, name="retool")
    assert status == 200 and answer["result"]["content"][0]["text"] == "changed"
    # nothing runs after the response: the change is in the stream when the handler returns
    entries = redis_client.xrange(f"{prefix}:changes")
    changes = [json.loads(fields[b"c"])["c"] for _, fields in entries]
    assert changes == [{"method": "notifications/tools/list_changed"}]


def until(
    handler: LambdaHandler, task_id: str, *statuses: str, bound: float = 30.0
) -> dict[str, Any]:
    """Poll ``tasks/get`` (one invocation each) until the worker moved the task."""
    deadline = time.monotonic() + bound
    while True:
        status, got = rpc(handler, "tasks/get", {"taskId": task_id})
        assert status == 200, got
        if got["result"]["status"] in statuses:
            return dict(got["result"])
        assert time.monotonic() < deadline, got
        time.sleep(0.02)  # the poll interval: the change happens in the worker


def test_a_task_is_created_by_one_invocation_and_run_by_a_worker(
    fleet: tuple[Callable[[], LambdaHandler], Any, str],
    redis_url: str,  # noqa: F811
) -> None:
    cold, redis_client, prefix = fleet
    worker = TaskWorker(build(redis_url, prefix, run_bodies=True), lease=3.0, poll_interval=0.02)
    with anyio.from_thread.start_blocking_portal() as portal:
        running = portal.start_task_soon(worker.run)
        try:
            status, created = rpc(
                cold(),
                "tools/call",
                {"name": "report", "arguments": {"call_id": "t1"}},
                name="report",
            )
            assert status == 200 and created["result"]["resultType"] == "task", created
            task_id = created["result"]["taskId"]
            # the invocation returned at once; the worker runs the body, which asks midway
            asked = until(cold(), task_id, "input_required")
            (key,) = asked["inputRequests"]
            assert key.startswith("publish")
            status, updated = rpc(
                cold(),
                "tasks/update",
                {"taskId": task_id, "inputResponses": {key: accept(ok=True)}},
            )
            assert status == 200 and "error" not in updated, updated
            done = until(cold(), task_id, "completed", "failed")
            assert done["status"] == "completed", done
            assert done["result"]["content"][0]["text"] == "published=True"
        finally:
            portal.call(worker.stop)
            running.result(timeout=30)
    assert int(redis_client.get(f"{prefix}:effects:t1")) == 1
    assert worker.held == frozenset()


def test_discover_says_what_a_lambda_serves(
    fleet: tuple[Callable[[], LambdaHandler], Any, str],
) -> None:
    cold, _, _ = fleet
    params = {"_meta": {f"io.modelcontextprotocol/{k}": v for k, v in _META.items()}}
    message = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": params}
    headers = {"mcp-protocol-version": MODERN, "mcp-method": "server/discover"}
    # a base64 body (as a gateway sends a binary one) is decoded first
    answer = cold()(event(message, headers=headers, encode=True), LambdaContext())
    assert answer["statusCode"] == 200
    assert int(answer["headers"]["content-length"]) == len(answer["body"].encode())
    result = json.loads(answer["body"])["result"]
    # only the modern versions, and no change notifications (they need a listen stream)
    assert result["supportedVersions"] == [MODERN]
    assert result["capabilities"]["tools"] == {}
    assert TASKS_EXTENSION in result["capabilities"]["extensions"]
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "lambda"


def test_what_cannot_live_across_invocations_gets_the_specified_answer(
    fleet: tuple[Callable[[], LambdaHandler], Any, str],
) -> None:
    cold, _, _ = fleet
    handler = cold()
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "legacy", "version": "1"},
        },
    }
    answer = handler(event(initialize), LambdaContext())
    assert answer["statusCode"] == 400
    error = json.loads(answer["body"])["error"]
    assert error["code"] == -32022
    assert error["data"] == {"supported": [MODERN], "requested": "2025-11-25"}
    assert "mcp-session-id" not in answer["headers"]
    # a legacy session's request (it never got one here) is refused the same way
    legacy_call = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
    headers = {"mcp-session-id": "s1", "mcp-protocol-version": "2025-11-25"}
    answer = handler(event(legacy_call, headers=headers), LambdaContext())
    assert answer["statusCode"] == 400
    assert json.loads(answer["body"])["error"]["data"]["requested"] == "2025-11-25"
    # no standalone stream and no session to end
    for verb in ("GET", "DELETE"):
        answer = handler(event(None, method=verb), LambdaContext())
        assert answer["statusCode"] == 405 and answer["headers"]["allow"] == "POST"
    # a listen stream would stay open until the function's timeout: refused at once
    listen_params = {"notifications": {"toolsListChanged": True}}
    status, listen = rpc(handler, "subscriptions/listen", listen_params)
    assert status == 404 and listen["error"]["code"] == -32601
    # a body that is not JSON is the app's own parse error
    garbage = event(None, headers={"mcp-protocol-version": MODERN})
    garbage["body"] = "{not json"
    answer = handler(garbage, LambdaContext())
    assert answer["statusCode"] == 400
    assert json.loads(answer["body"])["error"]["code"] == -32700
    # the probes are still the app's
    answer = handler(event(None, method="GET", path="/healthz"), LambdaContext())
    assert answer["statusCode"] == 200


def test_a_part_that_lives_in_one_container_is_refused(redis_url: str) -> None:  # noqa: F811
    import redis

    client = redis.Redis.from_url(redis_url, socket_timeout=10)
    try:
        with pytest.raises(ValueError, match="from_env"):
            lambda_handler(MCPServer("lambda"))  # a key made at start-up
        keys = [KEY]
        single = RequestStateSecurity(keys=keys, single_use=True)  # nonces in memory
        with pytest.raises(ValueError, match="RedisReplayStore"):
            lambda_handler(MCPServer("lambda", request_state_security=single))
        shared = RequestStateSecurity(keys=keys)
        with pytest.raises(ValueError, match="RedisTaskStore"):
            lambda_handler(MCPServer("lambda", request_state_security=shared, tasks=TaskRunner()))
        in_process = TaskRunner(RedisTaskStore(client, prefix="x"))  # bodies in the invocation
        with pytest.raises(ValueError, match="run_bodies=False"):
            lambda_handler(MCPServer("lambda", request_state_security=shared, tasks=in_process))
    finally:
        client.close()


def test_without_mangum_the_error_names_the_extra() -> None:
    probe = textwrap.dedent(
        """
        import sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name == "mangum" or name.startswith("mangum."):
                    raise ModuleNotFoundError(f"No module named {name!r}")
                return None
        sys.meta_path.insert(0, Block())
        from mrtr.server import MCPServer, RequestStateSecurity, lambda_handler
        app = MCPServer("x", request_state_security=RequestStateSecurity(keys=[bytes(32)]))
        try:
            lambda_handler(app)
        except ImportError as exc:
            print(exc)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    assert "pip install 'mrtr[lambda]'" in done.stdout, done.stdout + done.stderr


class APIGateway(httpx.AsyncBaseTransport):
    """Stands in for an API Gateway HTTP API: each request becomes one invocation.

    Every request goes to the next container: a new cold one every ``cold_every``
    requests, else the warm ones in turn (as Lambda spreads concurrent invocations).
    """

    def __init__(self, cold: Callable[[], LambdaHandler], *, cold_every: int = 2) -> None:
        self._cold = cold
        self._cold_every = cold_every
        self._warm: list[LambdaHandler] = []
        self._seen = 0
        self.containers: list[int] = []  # which container served each request
        self._lock = threading.Lock()  # one invocation at a time per container

    def _pick(self) -> LambdaHandler:
        if self._seen % self._cold_every == 0:
            self._warm.append(self._cold())
            self.containers.append(len(self._warm) - 1)
            return self._warm[-1]
        index = self._seen % len(self._warm)
        self.containers.append(index)
        return self._warm[index]

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = await request.aread()
        headers = {k.decode().lower(): v.decode() for k, v in request.headers.raw}
        message = json.loads(body) if body else None
        built = event(message, method=request.method, path=request.url.path, headers=headers)

        def invoke() -> dict[str, Any]:
            with self._lock:
                handler = self._pick()
                self._seen += 1
                return handler(built, LambdaContext())

        answer = await anyio.to_thread.run_sync(invoke)
        raw = answer.get("body") or ""
        data = base64.b64decode(raw) if answer.get("isBase64Encoded") else raw.encode()
        return httpx.Response(answer["statusCode"], headers=answer["headers"], content=data)


async def _drive_with_the_client(gateway: APIGateway) -> tuple[str, str]:
    from mrtr import Client, Task
    from mrtr.types import ElicitResult

    async def answer(ctx: Any, params: Any) -> Any:
        if params.message == "A memo?":
            return ElicitResult(action="accept", content={"text": "rent"})
        return ElicitResult(action="accept", content={"ok": True})

    async with (
        httpx.AsyncClient(transport=gateway) as http,
        Client(
            f"https://{HOST}/mcp",
            http_client=http,
            elicitation_callback=answer,
            capabilities={"elicitation": {"form": {}}},
        ) as client,
    ):
        result = await client.call_tool("transfer", {"call_id": "k1", "amount": 7})
        transfer = str(getattr(result.content[0], "text", ""))
        task = await client.session.call_tool("report", {"call_id": "k2"}, allow_task=True)
        assert isinstance(task, Task)
        with anyio.fail_after(30):
            while not task.is_terminal:
                task = await task.wait(client)
                if not task.is_terminal:
                    yes = {"action": "accept", "content": {"ok": True}}
                    task = await task.answer(client, {key: yes for key in task.requests})
        report = await task.result(client)
    return transfer, str(getattr(report.content[0], "text", ""))


def test_mrtrs_client_drives_the_handler_through_a_gateway(
    fleet: tuple[Callable[[], LambdaHandler], Any, str],
    redis_url: str,  # noqa: F811
) -> None:
    cold, redis_client, prefix = fleet
    gateway = APIGateway(cold)
    worker = TaskWorker(build(redis_url, prefix, run_bodies=True), lease=3.0, poll_interval=0.02)
    with anyio.from_thread.start_blocking_portal() as portal:
        running = portal.start_task_soon(worker.run)
        try:
            transfer, report = anyio.run(_drive_with_the_client, gateway)
        finally:
            portal.call(worker.stop)
            running.result(timeout=30)
    assert transfer == "transferred 7: rent"
    assert report == "published=True"
    assert len(set(gateway.containers)) > 2  # the legs were spread over containers
    assert int(redis_client.get(f"{prefix}:effects:k1")) == 1
    assert int(redis_client.get(f"{prefix}:effects:k2")) == 1


def test_a_lifespan_that_does_not_end_is_cancelled_after_the_timeout(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ended = threading.Event()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            assert (await receive())["type"] == "lifespan.startup"
            await send({"type": "lifespan.startup.complete"})
            assert (await receive())["type"] == "lifespan.shutdown"
            await send({"type": "lifespan.shutdown.complete"})
            try:
                await asyncio.Event().wait()  # an end that never comes
            finally:
                ended.set()
            return
        await receive()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    with pytest.raises(ValueError, match="shutdown_timeout"):
        LambdaHandler(app, shutdown_timeout=0)
    handler = LambdaHandler(app, shutdown_timeout=0.2)
    try:
        answer = handler(event({"jsonrpc": "2.0", "id": 1, "method": "ping"}), LambdaContext())
    finally:
        handler.close()
    assert answer["statusCode"] == 200
    assert ended.is_set()  # cancelled before the invocation returned, not left pending
    assert "still running" in caplog.text
