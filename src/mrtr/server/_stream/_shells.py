"""Stream shells around the core: in-process (memory pair) and stdio.

Both share `_StreamServer`: notifications and ``initialize`` are answered inline (so the
era is settled before the next message is taken), every other request goes to a pool
of worker tasks (so a slow handler does not block the connection), and
``notifications/cancelled`` cancels the worker serving that request (no response is
sent for it then). Over stdio a reader loop feeds it; in process the client's `send`
hands it each message directly, still parsed from JSON text.

At most ``max_concurrent_requests`` requests are in flight per connection: beyond that,
taking the next request waits until one finishes (back-pressure: the stdio reader parks
one request and stops at the next, the in-process client's `send` waits). Responses and
notifications behind a parked request are still read, so a handler waiting for the
client's answer to its own request never starves.
"""

from __future__ import annotations

import json
import logging
import sys
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext
from typing import TYPE_CHECKING, Any, BinaryIO

import anyio
import anyio.abc
import anyio.to_thread

from mrtr._wire._speedups import event_factory
from mrtr._wire.framing import encode_text, utf8_size
from mrtr.errors import TransportError
from mrtr.server._core._jsonrpc import (
    JSONObject,
    Refusal,
    decode_line,
    encode_outgoing,
    oversize,
    response_id,
)
from mrtr.server._core._notify import Listener, pump
from mrtr.server._defaults import DEFAULT_MAX_CONCURRENT_REQUESTS, DEFAULT_MAX_JSON_DEPTH
from mrtr.transports import RequestFailed, Transport, create_memory_transport_pair
from mrtr.transports._memory import MemoryTransport, post_frame

if TYPE_CHECKING:
    from mrtr.server._core._connection import ServerConnection

Connect = Callable[[], "ServerConnection"]
"""Makes the protocol state of one new connection (`Server.connection`)."""

__all__ = ["InProcessTransport", "open_stdio", "serve_messages", "serve_stdio"]

_logger = logging.getLogger("mrtr.server")
_DECODER = json.JSONDecoder()

Receive = Callable[[], Awaitable["JSONObject | RequestFailed | Refusal"]]
Send = Callable[[JSONObject], Awaitable[None]]
_LISTEN = "subscriptions/listen"  # a request that lasts as long as its client

Post = Callable[[JSONObject], bool]
"""Delivers a message now if that needs no waiting (``False`` otherwise): a fast path."""


async def serve_messages(
    connect: Connect,
    receive: Receive,
    send: Send,
    *,
    max_concurrent_requests: int = DEFAULT_MAX_CONCURRENT_REQUESTS,
) -> None:
    """Serve one connection until ``receive`` raises `TransportError` (end of input).

    Requests still running when the input ends are allowed to finish; the caller
    cancels the surrounding scope to stop them. Several request tasks may call ``send``
    at once: it must deliver each message whole (the memory transport queues one frame
    per call; the stdio shell serializes its writes itself).
    """
    async with anyio.create_task_group() as tg:
        stream = _StreamServer(connect(), send, tg, max_concurrent_requests=max_concurrent_requests)
        # One request that finds no room is parked and the reader reads on: answers to the
        # server's own requests may sit behind it, and every slot may be a handler waiting
        # for one. A second request then waits for the first to be taken (back-pressure).
        parked: anyio.Event | None = None

        async def park(message: JSONObject, taken: anyio.Event) -> None:
            try:
                await stream.wait_for_room(message)
            finally:
                taken.set()

        try:
            while True:
                try:
                    message = await receive()
                except TransportError:
                    return
                if isinstance(message, dict) and _is_queued(message):
                    if parked is not None:
                        await parked.wait()
                    if not stream.take_now(message):
                        parked = anyio.Event()
                        tg.start_soon(park, message, parked)
                    continue
                await stream.dispatch(message)
        finally:
            stream.end_of_input()


# How many request workers may wait for work at once; more exit when they run out of it.
# Why a pool at all: starting a task per request (anyio's task bookkeeping plus a cancel
# scope) was the largest share of the server's cost per round trip in memory; a worker
# that is idle, or has just answered a request, takes the next one for much less.
# Why this many: a burst of concurrent multi-round calls sends its next round once the
# previous one is answered; with fewer idle workers than calls in flight, most of each
# round would start new tasks again. An idle worker is a suspended task (a few KiB), so
# the ceiling on what a connection keeps after a burst is a few MiB.
_MAX_IDLE_WORKERS = 1024


class _StreamServer:
    """The per-connection state of a stream server.

    Requests run on a pool of worker tasks in the connection's task group: a queued
    request wakes an idle worker or, when none is idle, starts a new one, so a slow
    handler never delays another request. Each worker runs in its own cancel scope;
    ``notifications/cancelled`` cancels the worker serving that request, which then
    exits (another takes its place on demand).
    """

    def __init__(
        self,
        connection: ServerConnection,
        send: Send,
        task_group: anyio.abc.TaskGroup,
        *,
        max_concurrent_requests: int,
        post: Post | None = None,
    ) -> None:
        if max_concurrent_requests < 1:
            raise ValueError("max_concurrent_requests must be at least 1")
        self._connection = connection
        self.send = send
        self._post = post
        self._task_group = task_group
        self._max_concurrent = max_concurrent_requests
        self._pending = 0  # requests queued or running
        self._blocked: deque[_Blocked] = deque()  # requests waiting for room, oldest first
        self._inflight: dict[Any, anyio.CancelScope] = {}
        # the workers serving a `subscriptions/listen`: a listen never ends by itself, so
        # the end of input ends them (else a client gone left its server running forever)
        self._listening: set[anyio.CancelScope] = set()
        self._queue: deque[JSONObject] = deque()
        self._idle: list[anyio.Event] = []
        self._input_ended = False
        self._pump: anyio.CancelScope | None = None  # a legacy connection's change pusher
        self._new_event: Callable[[], anyio.Event] = event_factory()

    async def dispatch(self, message: JSONObject | RequestFailed | Refusal) -> None:
        """Take one incoming message: queue a request, answer anything else inline.

        Waits while the connection has ``max_concurrent_requests`` requests in flight.
        """
        if isinstance(message, RequestFailed):
            return
        if isinstance(message, Refusal):
            await self._send_quietly(message.response())
            return
        if self.take_now(message):
            return
        method = message.get("method")
        if method == "notifications/cancelled":
            self._cancel(message.get("params"))
        elif "id" in message and isinstance(method, str) and method != "initialize":
            await self.wait_for_room(message)
        else:
            await self._answer(message)

    def has_room(self) -> bool:
        """Whether a request sent now would be queued at once (`take_now`), not wait."""
        return self._pending < self._max_concurrent and not self._blocked

    def take_now(self, message: JSONObject) -> bool:
        """Queue a request for a worker if there is room now, without waiting.

        ``False`` for anything else (a notification, ``initialize``, a response) and for a
        request that has to wait for room: `dispatch` takes those.
        """
        if self.has_room() and _is_queued(message):
            self._pending += 1
            self._queue.append(message)
            self._wake_worker()
            return True
        return False

    def end_of_input(self) -> None:
        """No more messages: workers finish what is queued, then exit.

        Requests to the client still waiting fail: its answer can no longer arrive.
        """
        self._input_ended = True
        self._connection.close("the client closed the connection")
        if self._pump is not None:
            self._pump.cancel()
        for scope in self._listening:
            scope.cancel()
        idle, self._idle = self._idle, []
        for event in idle:
            event.set()

    def _cancel(self, params: Any) -> None:
        key = response_id(params.get("requestId")) if isinstance(params, dict) else None
        scope = None if key is None else self._inflight.get(key)
        if scope is not None:
            scope.cancel()

    async def _answer(self, message: JSONObject) -> None:
        response = await self._connection.handle(message, emit=self.send)
        if response is not None:
            await self._send_quietly(response)
            if self._pump is None and self._connection.era == "legacy":
                # registered now, before the client's next message: no change is missed
                listener = self._connection.legacy_listener()
                if self._connection.hub.add(listener):
                    self._pump = anyio.CancelScope()
                    self._task_group.start_soon(self._push_changes, listener, self._pump)

    async def _push_changes(self, listener: Listener, scope: anyio.CancelScope) -> None:
        """A legacy connection's change notifications, for as long as it lives."""
        hub = self._connection.hub
        with scope:
            try:
                await pump(listener, self.send)
            except TransportError:
                _logger.debug("the connection closed under a change notification")
            finally:
                hub.remove(listener)

    async def _send_quietly(self, response: JSONObject) -> None:
        try:
            await self.send(response)
        except TransportError:
            _logger.debug("could not send the response to %r", response.get("id"))

    def _wake_worker(self) -> None:
        if self._idle:
            self._idle.pop().set()
        else:
            self._task_group.start_soon(self._work)

    async def _work(self) -> None:
        """Answer queued requests until there is none and waiting is not worth it."""
        with anyio.CancelScope() as scope:
            while not scope.cancel_called:
                if self._queue:
                    await self._run_request(self._queue.popleft(), scope)
                elif self._input_ended or len(self._idle) >= _MAX_IDLE_WORKERS:
                    return
                else:
                    event = self._new_event()
                    self._idle.append(event)
                    await event.wait()
        if self._queue:  # cancelled with a request handed over to it: another takes it
            self._wake_worker()

    async def _run_request(self, message: JSONObject, scope: anyio.CancelScope) -> None:
        key = response_id(message.get("id"))  # an unusable id cannot be cancelled
        if key is not None:
            self._inflight[key] = scope
        listening = message.get("method") == _LISTEN
        if listening:
            if self._input_ended:  # queued when the client went: nobody left to listen
                self._inflight.pop(key, None)
                self._release()
                return
            self._listening.add(scope)
        try:
            response = await self._connection.handle(message, emit=self.send)
            # a cancelled request gets no response: the send's checkpoint stops it
            if response is not None and (scope.cancel_called or not self._post_now(response)):
                await self._send_quietly(response)
        finally:
            if listening:
                self._listening.discard(scope)
            if self._inflight.get(key) is scope:
                del self._inflight[key]
            self._release()

    def _post_now(self, response: JSONObject) -> bool:
        """Deliver a response without waiting if the shell can (in process); else ``False``."""
        if self._post is None:
            return False
        try:
            return self._post(response)
        except TransportError:
            _logger.debug("could not send the response to %r", response.get("id"))
            return True

    def _release(self) -> None:
        """A request finished: its slot passes to the oldest waiting sender, if any."""
        if self._blocked:
            # the slot is handed over, never freed and retaken: a sender arriving now
            # cannot overtake the ones waiting, and the woken sender need not check again
            blocked = self._blocked.popleft()
            self._queue.append(blocked.take())
        else:
            self._pending -= 1

    async def wait_for_room(self, message: JSONObject | str) -> None:
        """Queue a request `take_now` refused once a finishing request hands over its slot.

        The in-process shell passes the request's JSON text, parsed again when the slot
        comes: many senders may wait at once, and text is far lighter than a tree of dicts
        for the garbage collector to walk meanwhile.
        """
        blocked = _Blocked(message, self._new_event())
        self._blocked.append(blocked)
        try:
            await blocked.event.wait()
        except BaseException:  # cancelled: withdraw the message unless it was taken
            if not blocked.taken:
                self._blocked.remove(blocked)
            raise


class _Blocked:
    """A request whose sender waits for a free slot; a finishing request takes it."""

    __slots__ = ("event", "message", "taken")

    def __init__(self, message: JSONObject | str, event: anyio.Event) -> None:
        self.message = message
        self.event = event
        self.taken = False

    def take(self) -> JSONObject:
        self.taken = True
        self.event.set()
        message = self.message
        # text only comes from the in-process shell, encoded from a dict in this process
        return _DECODER.raw_decode(message)[0] if isinstance(message, str) else message


def _is_queued(message: JSONObject) -> bool:
    """Whether a message is a request for a worker (not answered inline)."""
    method = message.get("method")
    return (
        "id" in message
        and isinstance(method, str)
        and method != "initialize"
        and method != "notifications/cancelled"
    )


class InProcessTransport(Transport):
    """A client transport to a server in this process (`Server.client_transport`).

    Every message is framed as JSON both ways, with the size cap checked on arrival.
    What the client sends is handed to the server directly (no reader task in between:
    a request is queued for a worker, anything else is answered in the caller's task);
    what the server sends goes through an in-memory channel the client reads. The
    server's workers run in the transport's lifespan task group (``async with``).
    """

    def __init__(
        self,
        connect: Connect,
        *,
        max_message_size: int,
        max_concurrent_requests: int,
        background: Callable[[], AbstractAsyncContextManager[None]] | None = None,
    ) -> None:
        self._connect = connect
        self._background = background
        self._max_message_size = max_message_size
        self._max_concurrent_requests = max_concurrent_requests
        self._client_end: MemoryTransport | None = None
        self._server_end: MemoryTransport | None = None
        self._stream: _StreamServer | None = None
        self._opened = False
        self._closed_reason: str | None = None

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        """Connect to the server; its request workers run in the lifespan's task group.

        Raises:
            TransportError: the transport was opened before.
        """
        if self._opened:
            raise TransportError("the in-process transport is already open (it opens only once)")
        self._opened = True
        client_end, server_end = create_memory_transport_pair(
            max_message_size=self._max_message_size
        )
        self._client_end, self._server_end = client_end, server_end

        async def send(message: JSONObject) -> None:
            data = encode_outgoing(message)
            if data is not None:
                await server_end.send_raw(data)

        def post(message: JSONObject) -> bool:
            data = encode_outgoing(message)
            return data is None or post_frame(server_end, data)

        async with (
            self._background() if self._background is not None else nullcontext(),
            anyio.create_task_group() as task_group,
        ):
            self._stream = _StreamServer(
                self._connect(),
                send,
                task_group,
                max_concurrent_requests=self._max_concurrent_requests,
                post=post,
            )
            try:
                yield
            finally:
                await self.aclose()
                task_group.cancel_scope.cancel()

    def _end(self) -> MemoryTransport:
        if self._client_end is None:
            raise TransportError("the in-process transport is not open")
        return self._client_end

    async def send(self, message: JSONObject) -> None:
        """Send one message to the server.

        A message over the size cap ends the connection, as it would on a stream: the
        server stops, and the client's next `receive` fails once it read what was sent.

        Raises:
            TransportError: not open, or closed.
            TypeError: the message is not a dict or is not JSON-serializable.
            ValueError: the message holds NaN or an infinity.
        """
        self._end()
        stream = self._stream
        if stream is None:
            raise TransportError(self._closed_reason or "the in-process transport is closed")
        text = encode_text(message)
        queued = _is_queued(message)  # as of the server's copy: the same JSON
        del message  # nor is the caller's dict kept while this send waits for room
        size = utf8_size(text)
        if size > self._max_message_size:
            _logger.warning(
                "closing the in-process connection after a %d-byte message (cap %d bytes)",
                size,
                self._max_message_size,
            )
            await self._end_of_input("the server closed the connection after an oversized message")
            return
        if queued and not stream.has_room():
            await stream.wait_for_room(text)  # parsed once, when its slot comes
            return
        # the server gets its own copy, parsed from the JSON text (a dict: it was one; our
        # own compact encoding, so `raw_decode` needs none of the checks `json.loads` does)
        parsed: JSONObject = _DECODER.raw_decode(text)[0]
        if stream.take_now(parsed):
            return
        if _is_queued(parsed):
            del parsed  # not held while waiting: the server parses the text again
            await stream.wait_for_room(text)
        else:
            await stream.dispatch(parsed)

    async def _end_of_input(self, reason: str) -> None:
        stream, self._stream = self._stream, None
        if self._closed_reason is None:
            self._closed_reason = reason
        if stream is not None:
            stream.end_of_input()
        if self._server_end is not None:
            await self._server_end.aclose()

    def receive(self) -> Coroutine[Any, Any, JSONObject | RequestFailed]:
        """Receive the next message from the server.

        The client end's own `receive`, returned rather than awaited here: one coroutine
        less per message.

        Raises:
            TransportError: not open, or closed.
        """
        return self._end().receive()

    async def aclose(self) -> None:
        """Stop the server side and close both ends; safe to call twice."""
        await self._end_of_input("the in-process transport is closed")
        if self._client_end is not None:
            await self._client_end.aclose()


class _StdioReader:
    """Reads newline-framed JSON messages from a binary stream, with a size cap.

    Reads run in a worker thread that a cancelled read abandons (a blocking read of a
    pipe cannot be interrupted; the process is ending by then anyway).
    """

    def __init__(self, stream: BinaryIO, *, max_message_size: int, max_json_depth: int) -> None:
        self._stream = stream
        self._max = max_message_size
        self._max_depth = max_json_depth
        # its own thread, never one of the default pool's: sync tools run there, and
        # once they hold every thread a line that would release them could not be read
        self._limiter = anyio.CapacityLimiter(1)

    async def _readline(self) -> bytes:
        return await anyio.to_thread.run_sync(
            self._stream.readline, self._max + 1, abandon_on_cancel=True, limiter=self._limiter
        )

    async def receive(self) -> JSONObject | Refusal:
        while True:
            line = await self._readline()
            if not line:
                raise TransportError("stdin closed")
            if len(line) > self._max and not line.endswith(b"\n"):
                await self._discard_rest()
                return oversize(self._max)
            message = decode_line(line, max_depth=self._max_depth)
            if message is not None:
                return message

    async def _discard_rest(self) -> None:
        while True:
            chunk = await self._readline()
            if not chunk or chunk.endswith(b"\n"):
                return


class _StdioWriter:
    """Writes messages as lines to a binary stream, one writer thread at a time."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self._lock = anyio.Lock()
        self._limiter = anyio.CapacityLimiter(1)  # as the reader's: never wait on sync tools

    def _write(self, data: bytes) -> None:
        self._stream.write(data)
        self._stream.flush()

    async def send(self, message: JSONObject) -> None:
        encoded = encode_outgoing(message)
        if encoded is None:
            return
        data = encoded + b"\n"
        try:
            async with self._lock:  # one writer thread at a time: lines never interleave
                await anyio.to_thread.run_sync(self._write, data, limiter=self._limiter)
        except OSError as exc:
            raise TransportError(f"stdout closed: {exc}") from exc


@asynccontextmanager
async def open_stdio(
    *, max_message_size: int, max_json_depth: int = DEFAULT_MAX_JSON_DEPTH
) -> AsyncIterator[tuple[Any, Any]]:
    """This process's stdin and stdout as ``(reader, writer)``: ``.receive()``, ``.send()``.

    On asyncio with pipes the loop reads and writes them itself (`_stdio_pipes`);
    otherwise worker threads do.
    """
    from mrtr.server._stream._stdio_pipes import open_asyncio_stdio

    pipes = await open_asyncio_stdio(
        max_message_size=max_message_size, max_json_depth=max_json_depth
    )
    if pipes is not None:  # asyncio and pipes: no thread per line
        try:
            yield pipes, pipes
        finally:
            await pipes.aclose()
        return
    yield (
        _StdioReader(
            sys.stdin.buffer, max_message_size=max_message_size, max_json_depth=max_json_depth
        ),
        _StdioWriter(sys.stdout.buffer),
    )


async def serve_stdio(
    connect: Connect,
    *,
    max_message_size: int,
    max_concurrent_requests: int,
    max_json_depth: int = DEFAULT_MAX_JSON_DEPTH,
) -> None:
    """Serve one client over this process's stdin and stdout until stdin closes."""
    async with open_stdio(max_message_size=max_message_size, max_json_depth=max_json_depth) as (
        reader,
        writer,
    ):
        await serve_messages(
            connect, reader.receive, writer.send, max_concurrent_requests=max_concurrent_requests
        )
