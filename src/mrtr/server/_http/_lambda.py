"""`lambda_handler`: a server's ASGI app as an AWS Lambda handler, through mangum.

A Lambda container serves one invocation at a time, is frozen between them and is
recycled at will; concurrent invocations land on different containers. So a Lambda
deployment is a fleet whose instances come and go with every request, and only the
modern era (2026-07-28) works there: every leg of a multi-round call stands alone, its
sealed state opens in any container sharing the keys. What cannot live across
invocations is refused, as the specification says, before the app sees it:

- a legacy request (no ``_meta`` envelope: ``initialize``, a session's requests) gets
  ``UnsupportedProtocolVersion`` (-32022, HTTP 400) naming the modern versions: its
  session would live in one container's memory and its back-channel needs a stream;
- ``GET`` and ``DELETE`` on the endpoint get 405 (no standalone stream, no session to end);
- ``subscriptions/listen`` gets "Method not found" (-32601): mangum buffers a response
  until it ends, so a stream that stays open would only end at the function's timeout;
- ``server/discover`` lists the modern versions only, and no ``listChanged`` or
  ``subscribe`` capability (no stream can carry those notifications).

What the app shares must be shared for real (`check_serverless`): keys that every
container holds, single-use states in a shared replay store, tasks in a shared store with
their bodies run by workers (no work runs after a response).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import MutableMapping
from typing import TYPE_CHECKING, Any, Literal

from mrtr._lazy import publish
from mrtr.server._core._jsonrpc import (
    HTTP_STATUS,
    HandlerError,
    JSONObject,
    Refusal,
    decode_incoming,
    encode_outgoing,
    error_response,
)
from mrtr.server._defaults import DEFAULT_LAMBDA_SHUTDOWN_TIMEOUT, DEFAULT_MAX_JSON_DEPTH
from mrtr.transports import DEFAULT_MAX_MESSAGE_SIZE
from mrtr.types import (
    META_PROTOCOL_VERSION,
    METHOD_NOT_FOUND,
    MODERN_PROTOCOL_VERSIONS,
    UNSUPPORTED_PROTOCOL_VERSION,
)

if TYPE_CHECKING:
    from mrtr.server._http._app import ASGIApp, ASGIReceive, ASGISend, Scope

__all__ = ["LambdaHandler", "lambda_handler"]

_LOCAL_TASK_STORES = frozenset({"MemoryTaskStore", "SqliteTaskStore"})  # one container's
_LISTEN = "subscriptions/listen"
_logger = logging.getLogger("mrtr.server.http")
_DISCOVER = "server/discover"
_STREAMED = frozenset({"listChanged", "subscribe"})  # capabilities that need a listen stream
# what the transport specification has a server assume of a request with neither an
# initialize version nor an MCP-Protocol-Version header
_HEADERLESS_VERSION = "2025-03-26"


def check_serverless(server: Any) -> None:
    """Refuse a server whose shared parts would live in one container only.

    Raises:
        ValueError: the keys were made at start-up (each container would seal with its
            own), single-use states are recorded in this process's memory, tasks are
            kept in a local store, or their bodies would run in the invocation.
    """
    server = getattr(server, "server", server)  # an MCPServer's low-level Server
    policy = server.request_state_policy
    if policy is not None and policy.ephemeral_key:
        raise ValueError(
            "on AWS Lambda every container is another instance: a requestState key made "
            "at start-up is refused by the next container. Share keys: "
            "request_state_security=RequestStateSecurity.from_env('MRTR_KEYS', ...)"
        )
    store = None if policy is None else policy.replay_store
    if policy is not None and policy.single_use and type(store).__name__ == "MemoryReplayStore":
        raise ValueError(
            "single_use=True needs a shared replay store on AWS Lambda (each container "
            "has its own memory): replay_store=RedisReplayStore(client, prefix=...)"
        )
    runner = server.tasks
    if runner is None:
        return
    if type(runner.store).__name__ in _LOCAL_TASK_STORES:
        raise ValueError(
            f"a {type(runner.store).__name__} lives in one container: tasks on AWS Lambda "
            "need a shared store such as RedisTaskStore"
        )
    if runner.run_bodies:
        raise ValueError(
            "an AWS Lambda invocation ends with its response, so a task body started in it "
            "would be frozen or lost: TaskRunner(store, run_bodies=False), and run the "
            "bodies in workers (mrtr worker module:app)"
        )


class _ModernOnly:
    """The ASGI app, with what cannot live across invocations refused in front of it."""

    def __init__(self, app: ASGIApp, *, path: str, max_message_size: int, max_depth: int):
        self._app = app
        self._path = path.rstrip("/") or "/"
        self._max_message_size = max_message_size
        self._max_depth = max_depth

    async def __call__(self, scope: Scope, receive: ASGIReceive, send: ASGISend) -> None:
        on_endpoint = (
            scope["type"] == "http" and (str(scope["path"]).rstrip("/") or "/") == self._path
        )
        if not on_endpoint:  # probes, metadata, lifespan: the app's
            await self._app(scope, receive, send)
            return
        if scope["method"] != "POST":
            await _reply(send, 405, None, [(b"allow", b"POST")])
            return
        first = await receive()
        body = bytes(first.get("body", b""))
        replayed = [first]

        async def again() -> MutableMapping[str, Any]:
            return replayed.pop() if replayed else await receive()

        if not first.get("more_body", False) and len(body) <= self._max_message_size:
            message = decode_incoming(body, max_depth=self._max_depth)
            # the app's own answers: a parse error, a notification (202)
            if not isinstance(message, Refusal) and "id" in message and "method" in message:
                refusal = self._refusal(scope, message)
                if refusal is not None:
                    await _reply(send, *refusal)
                    return
                if message["method"] == _DISCOVER:
                    await self._app(scope, again, _DiscoverRewrite(send))
                    return
        await self._app(scope, again, send)

    def _refusal(self, scope: Scope, message: JSONObject) -> tuple[int, JSONObject] | None:
        request_id, method = message["id"], message["method"]
        params = message.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        if not (isinstance(meta, dict) and META_PROTOCOL_VERSION in meta):
            requested = params.get("protocolVersion") if isinstance(params, dict) else None
            if not isinstance(requested, str):
                requested = _header(scope, b"mcp-protocol-version") or _HEADERLESS_VERSION
            error = HandlerError(
                UNSUPPORTED_PROTOCOL_VERSION,
                "Unsupported protocol version: this server runs on AWS Lambda and serves "
                "2026-07-28 requests only (a legacy session cannot live across invocations)",
                {"supported": list(MODERN_PROTOCOL_VERSIONS), "requested": requested},
            )
        elif method == _LISTEN:
            error = HandlerError(
                METHOD_NOT_FOUND,
                "Method not found: subscriptions/listen needs a stream that stays open, "
                "and this server runs on AWS Lambda, whose responses end with the "
                "invocation; poll instead (tasks/get)",
                {"method": method},
            )
        else:
            return None
        return HTTP_STATUS.get(error.code, 400), error_response(request_id, error)


class _DiscoverRewrite:
    """Sends the app's ``server/discover`` answer as it is true on Lambda.

    Only the modern versions are served, and no change notification can be delivered
    (no listen stream): the answer says so, so that a client neither picks a legacy
    version nor opens a stream to be told of changes.
    """

    def __init__(self, send: ASGISend) -> None:
        self._send = send
        self._start: MutableMapping[str, Any] | None = None
        self._body = bytearray()

    async def __call__(self, message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            self._start = message
            return
        if message["type"] != "http.response.body" or self._start is None:
            await self._send(message)
            return
        self._body += message.get("body", b"")
        if message.get("more_body", False):
            return
        body = _rewrite_discover(bytes(self._body))
        headers = [
            (name, str(len(body)).encode() if bytes(name).lower() == b"content-length" else value)
            for name, value in self._start.get("headers", ())
        ]
        await self._send({**self._start, "headers": headers})
        await self._send({"type": "http.response.body", "body": body})


def _rewrite_discover(body: bytes) -> bytes:
    try:
        answer = json.loads(body)
        result = answer["result"]
        versions = result["supportedVersions"]
        capabilities = result["capabilities"]
    except (ValueError, KeyError, TypeError):
        return body  # an error, or not JSON: as the app sent it
    result["supportedVersions"] = [v for v in versions if v in MODERN_PROTOCOL_VERSIONS]
    for name, flags in capabilities.items():
        if name in ("tools", "prompts", "resources") and isinstance(flags, dict):
            capabilities[name] = {k: v for k, v in flags.items() if k not in _STREAMED}
    return encode_outgoing(answer) or body


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if bytes(key).lower() == name:
            return bytes(value).decode("latin-1")
    return None


async def _reply(
    send: ASGISend,
    status: int,
    body: JSONObject | None,
    headers: list[tuple[bytes, bytes]] | None = None,
) -> None:
    data = b"" if body is None else (encode_outgoing(body) or b"")
    head = list(headers or [])
    if body is not None:
        head.append((b"content-type", b"application/json"))
    await send({"type": "http.response.start", "status": status, "headers": head})
    await send({"type": "http.response.body", "body": data})


class LambdaHandler:
    """A Lambda handler (``handler(event, context) -> response``) for one server.

    Built by `lambda_handler`. It owns an event loop of its own, current in the calling
    thread during each invocation only (a Lambda runtime calls handlers from a plain
    thread); `close` it when done outside Lambda (tests).

    mangum returns once the app says its lifespan shut down, but the app still ends
    what the lifespan opened after saying so (the bus sends what it holds, the task
    group closes). The handler lets that finish, for ``shutdown_timeout`` seconds at
    most (then it is cancelled), before the invocation returns: a container is frozen
    after it, and what was left would only run at the next invocation, or never.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        lifespan: Literal["auto", "on", "off"] = "auto",
        api_gateway_base_path: str = "/",
        shutdown_timeout: float = DEFAULT_LAMBDA_SHUTDOWN_TIMEOUT,
    ) -> None:
        if not shutdown_timeout > 0:
            raise ValueError("shutdown_timeout must be positive")
        self.shutdown_timeout = shutdown_timeout
        try:
            from mangum import Mangum
        except ImportError as exc:
            raise ImportError(
                "lambda_handler needs mangum: pip install 'mrtr[lambda]'", name="mangum"
            ) from exc
        self.app = app
        """The ASGI app each invocation is served by."""
        self._loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self._loop)  # mangum asks for the current loop
        try:
            self._mangum = Mangum(
                app, lifespan=lifespan, api_gateway_base_path=api_gateway_base_path
            )
        finally:
            asyncio.set_event_loop(None)  # no loop of ours stays current in the thread

    def __repr__(self) -> str:
        return f"LambdaHandler({self.app!r})"

    def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        """Serve one invocation: an API Gateway (v1, v2), Function URL or ALB event."""
        if self._loop.is_closed():
            raise RuntimeError("this LambdaHandler is closed")
        asyncio.set_event_loop(self._loop)
        try:
            response = self._mangum(event, context)
            self._finish()
            return response
        finally:
            asyncio.set_event_loop(None)

    def _finish(self) -> None:
        """Let what the invocation started end (bounded), cancelling what will not."""
        pending = asyncio.all_tasks(self._loop)
        if not pending:
            return
        _, late = self._loop.run_until_complete(
            asyncio.wait(pending, timeout=self.shutdown_timeout)
        )
        if not late:
            return
        _logger.warning(
            "%d task(s) still running %.1f s after the response: cancelled",
            len(late),
            self.shutdown_timeout,
        )
        for task in late:
            task.cancel()
        self._loop.run_until_complete(asyncio.wait(late, timeout=self.shutdown_timeout))

    def close(self) -> None:
        """Close the handler's event loop (outside Lambda: a container never ends)."""
        if not self._loop.is_closed():
            self._loop.close()


def lambda_handler(
    server: Any,
    *,
    path: str = "/mcp",
    lifespan: Literal["auto", "on", "off"] = "auto",
    api_gateway_base_path: str = "/",
    shutdown_timeout: float = DEFAULT_LAMBDA_SHUTDOWN_TIMEOUT,
    **options: Any,
) -> LambdaHandler:
    """An AWS Lambda handler serving `server` (a `Server` or an `MCPServer`) at ``path``.

    Behind an API Gateway HTTP API or a Lambda Function URL (payload format 2.0; REST
    APIs and ALBs work too), through mangum: ``pip install 'mrtr[lambda]'``. Build it
    once, at module level, so that a warm container reuses it::

        handler = lambda_handler(app)   # the function's handler: module.handler

    Only 2026-07-28 requests are served (see the module docstring for what the others
    get). Each invocation opens and closes the app's lifespan (``lifespan="auto"``): a
    notification bus sends its queued changes before the response returns, and nothing
    runs after it.

    Args:
        server: the server; what it shares must be shared (keys, replay and task stores).
        path: the endpoint path, after ``api_gateway_base_path`` is stripped.
        lifespan: mangum's lifespan mode (``"off"``: no bus, no task lifespan).
        api_gateway_base_path: a prefix the gateway adds (a stage name, a custom
            domain's base path), stripped from each request's path.
        shutdown_timeout: seconds the lifespan's end may take after the response is
            ready (the bus sending its last changes), before it is cancelled.
        options: `Server.streamable_http_app`'s other options (``token_verifier``,
            ``allowed_origins``, ``max_message_size``...).

    Raises:
        ImportError: mangum is not installed.
        ValueError: a part that would live in one container only: a key made at start-up,
            single-use states in memory, tasks in a local store or run in the invocation.
    """
    check_serverless(server)
    options.setdefault("resumable_streams", False)  # no legacy session to resume
    app = server.streamable_http_app(path=path, **options)
    front = _ModernOnly(
        app,
        path=path,
        max_message_size=options.get("max_message_size", DEFAULT_MAX_MESSAGE_SIZE),
        max_depth=options.get("max_json_depth", DEFAULT_MAX_JSON_DEPTH),
    )
    return LambdaHandler(
        front,
        lifespan=lifespan,
        api_gateway_base_path=api_gateway_base_path,
        shutdown_timeout=shutdown_timeout,
    )


publish("mrtr.server", LambdaHandler, lambda_handler)
