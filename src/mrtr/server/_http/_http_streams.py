"""The SSE streams of the HTTP shell: a POST's stream, a stream resumed, a GET stream.

`write_stream` writes a POST's notifications, requests and response (`SSEWriter` stores
them first when the stream is resumable); `replay` picks a stored POST stream up after
``Last-Event-ID`` and follows it to its end, on any instance that shares the store;
`serve_get_stream` is a legacy session's standalone stream of change notifications.
A stream belongs to `owner_of` its session (and principal): another finds nothing.

A POST whose stream cannot be resumed needs no task or queue of its own: it runs in the
POST's task, inside `cancelled_on_disconnect`, and `PostStream` writes its events as
they come (an anyio task group, a task and a memory stream per POST cost more than
answering a small request).
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc

from mrtr._wire._speedups import loop_task_soon
from mrtr.server._core._jsonrpc import JSONObject
from mrtr.server._core._notify import pump
from mrtr.server._http._event_store import EventStore, StreamRead, new_stream_id
from mrtr.server._http._sse import SSEWriter

if TYPE_CHECKING:
    from mrtr.server._core._context import Principal
    from mrtr.server._http._sessions import Session

__all__ = [
    "CLOSE_STREAM",
    "PostStream",
    "cancel_on_disconnect",
    "cancelled_on_disconnect",
    "detach_on_disconnect",
    "owner_of",
    "replay",
    "serve_get_stream",
    "write_stream",
]

ASGIReceive = Callable[[], Awaitable[MutableMapping[str, Any]]]
ASGISend = Callable[[MutableMapping[str, Any]], Awaitable[None]]

_logger = logging.getLogger("mrtr.server.http")

CLOSE_STREAM: JSONObject = {}
"""Put on a POST's queue (by identity) when its handler asks to close the stream."""

REPLAY_WAIT = 30.0  # seconds a resumed stream waits for its next event before checking


def owner_of(session_id: str, principal: Principal | None) -> str:
    """Who may resume a stream: the session, and the principal that opened it."""
    if principal is None:
        return session_id
    return json.dumps([session_id, principal.client_id, principal.issuer, principal.subject])


async def replay(
    send: ASGISend,
    receive: ASGIReceive,
    store: EventStore,
    backlog: StreamRead,
    *,
    owner: str,
    last_event_id: str,
    stall_timeout: float,
) -> None:
    """Write a stored POST stream from where the client left it, until it ends."""
    sse = SSEWriter(send, stall_timeout=stall_timeout, what="a resumed SSE stream")
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:
            tg.start_soon(cancel_on_disconnect, receive, scope)
            await sse.start()
            read, cursor = backlog, last_event_id
            while sse.attached:
                for event_id, stored in read.events:
                    await sse.raw_event(event_id, stored)
                    cursor = event_id
                if read.ended:
                    break
                try:
                    following = await store.read_after(cursor, owner=owner, wait=REPLAY_WAIT)
                except Exception as exc:  # the store went down: end here, the client resumes
                    _logger.warning(
                        "ending a resumed SSE stream: the event store failed (%s: %s)",
                        type(exc).__name__,
                        exc,
                    )
                    break
                if following is None:  # expired meanwhile, or its session ended
                    break
                read = following
            await sse.close("the resumed stream is complete")
            tg.cancel_scope.cancel()


async def serve_get_stream(
    send: ASGISend,
    receive: ASGIReceive,
    session: Session,
    backlog: StreamRead | None,
    *,
    store: EventStore | None,
    retry_ms: int | None,
    stall_timeout: float,
) -> bool:
    """A legacy session's standalone stream: list changes, subscribed resources' updates.

    Returns:
        ``False`` when the server holds ``max_listeners`` (nothing was sent).
    """
    connection = session.connection
    listener = connection.legacy_listener()
    if not connection.hub.add(listener):
        return False
    sse = SSEWriter(
        send,
        stall_timeout=stall_timeout,
        store=store,
        stream_id=new_stream_id("g") if store is not None else None,
        retry_ms=retry_ms,
        what="its GET stream",
    )

    async def write(note: JSONObject) -> None:
        await sse.event(note)
        if not sse.attached:
            listener.drop(sse.detached_reason or "the client went away")

    session.get_stream = True
    try:
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(cancel_on_disconnect, receive, scope)
                await sse.start(owner=owner_of(session.session_id, session.principal))
                for event_id, stored in backlog.events if backlog is not None else ():
                    await sse.raw_event(event_id, stored)
                if sse.attached:
                    await pump(listener, write)
                await sse.close("the session ended")
                tg.cancel_scope.cancel()
    finally:
        session.get_stream = False
        connection.hub.remove(listener)
        listener.drop("its GET stream ended", quiet=True)
        await sse.end_in_store()  # the store forgets its writer's state too
    return True


async def cancel_on_disconnect(receive: ASGIReceive, scope: anyio.CancelScope) -> None:
    """Closing the response stream cancels the request."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            scope.cancel()
            return


async def detach_on_disconnect(receive: ASGIReceive, writer: list[SSEWriter]) -> None:
    """A resumable stream's client went away: its handler goes on, its events are kept."""
    while (await receive())["type"] != "http.disconnect":
        pass
    for sse in writer:  # none yet: a stream started later writes to a closed connection
        sse.detach("the client disconnected")


async def write_stream(
    sse: SSEWriter,
    first: JSONObject,
    rest: anyio.abc.ObjectReceiveStream[JSONObject],
    session: Session | None,
) -> None:
    """Write a POST's SSE stream: its notifications and requests, then its response."""
    await sse.start(owner=owner_of(session.session_id, session.principal) if session else None)
    message: JSONObject | None = first
    while message is not None:
        if message is CLOSE_STREAM:
            await sse.close("closed by the handler (the client resumes with Last-Event-ID)")
        else:
            await sse.event(message)
        if not sse.attached and not sse.resumable:
            return  # nobody reads it and nothing is kept: the handler is cancelled
        try:
            message = await rest.receive()
        except anyio.EndOfStream:
            message = None
    await sse.finish()


@asynccontextmanager
async def cancelled_on_disconnect(receive: ASGIReceive) -> AsyncIterator[anyio.CancelScope]:
    """Run the body in a scope that a disconnect (read by a watcher task) cancels.

    On asyncio the watcher is a bare loop task, cancelled when the body ends: an anyio
    task group and its task cost several times what serving a small request does. It
    starts once the body first lets the loop run: a request answered without waiting
    (no cancellation could reach it anyway) needs none. Elsewhere it is a task of a task
    group. The scope is yielded so that the body can cancel itself too.
    """
    scope = anyio.CancelScope()
    stop = loop_task_soon(cancel_on_disconnect, receive, scope)  # on asyncio only
    if stop is not None:
        with scope:
            try:
                yield scope
            finally:
                stop()
        return
    async with anyio.create_task_group() as tg:
        tg.start_soon(cancel_on_disconnect, receive, tg.cancel_scope)
        yield tg.cancel_scope
        tg.cancel_scope.cancel()


class PostStream:
    """A POST's SSE response written from the request's own task, begun by its first event.

    Until then nothing is sent: a request that emits nothing is answered as plain JSON
    (`started` stays false). Every write goes through an `SSEWriter`, so a client that
    stops reading is dropped after ``stall_timeout``; nothing of this stream is kept, so
    the request is then cancelled (``scope``), as it is when the client goes away.
    """

    def __init__(
        self, send: ASGISend, scope: anyio.CancelScope, *, stall_timeout: float, method: object
    ) -> None:
        self._send = send
        self._scope = scope
        self._stall = stall_timeout
        self._method = method
        self._sse: SSEWriter | None = None
        self._ready: anyio.Event | None = None  # set once the response head is out

    @property
    def started(self) -> bool:
        """Whether the SSE response has begun (a message was emitted)."""
        return self._sse is not None

    async def emit(self, message: JSONObject) -> None:
        """Write one notification or request as an event, beginning the response first."""
        sse = await self._writer()
        await sse.event(message)
        if not sse.attached:
            self._scope.cancel()  # nobody reads it and nothing is kept

    async def finish(self, response: JSONObject) -> None:
        """Write the response as the last event and end the stream."""
        sse = await self._writer()
        await sse.event(response)
        await sse.finish()

    async def _writer(self) -> SSEWriter:
        sse = self._sse
        if sse is None:  # the first event: the head goes first (the handler's tasks may race)
            ready = self._ready = anyio.Event()
            self._sse = sse = SSEWriter(
                self._send, stall_timeout=self._stall, what=f"the SSE stream of {self._method}"
            )
            try:
                await sse.start()
            finally:
                ready.set()
        elif self._ready is not None and not self._ready.is_set():
            await self._ready.wait()
        return sse
