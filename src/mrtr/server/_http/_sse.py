"""One SSE response: event ids through the `EventStore`, ``retry``, and a bound on stalls.

`SSEWriter` starts the response, writes each message as an event (first stored, when the
stream is resumable, so its id can be resumed from), and ends it. A store that fails
(Redis down) makes the stream non-resumable from there on, with one log line: the
client still gets its events, without ids. A client that stops
reading is not waited for: a write that cannot finish within ``stall_timeout`` detaches
the stream (logged), and what follows is only stored (a resumable stream) or dropped.
At most one message waits in the ASGI server per stream, so what a silent client can
hold is bounded by the transport's buffers, not by what the server has to say.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, TypeVar

import anyio

from mrtr.server._core._jsonrpc import JSONObject, encode_outgoing
from mrtr.server._defaults import DEFAULT_SSE_RETRY_MS, DEFAULT_STREAM_STALL_TIMEOUT
from mrtr.server._http._event_store import EventStore

__all__ = ["DEFAULT_SSE_RETRY_MS", "DEFAULT_STREAM_STALL_TIMEOUT", "SSEWriter"]

_logger = logging.getLogger("mrtr.server.http")

ASGISend = Callable[[MutableMapping[str, Any]], Awaitable[None]]
_T = TypeVar("_T")

# the defaults (with the other serving ones): seconds one SSE write may wait for a
# client that does not read before it is dropped; the priming event's ``retry`` (ms)

_HEADERS = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]


class SSEWriter:
    """Writes one SSE response; detaches from a client that stops reading."""

    def __init__(
        self,
        send: ASGISend,
        *,
        stall_timeout: float = DEFAULT_STREAM_STALL_TIMEOUT,
        store: EventStore | None = None,
        stream_id: str | None = None,
        retry_ms: int | None = DEFAULT_SSE_RETRY_MS,
        headers: list[tuple[bytes, bytes]] | None = None,
        what: str = "an SSE stream",
    ) -> None:
        self._send = send
        self._stall = stall_timeout
        self._store = store if stream_id is not None else None
        self._stream_id = stream_id
        self._retry_ms = retry_ms
        self._headers = [*_HEADERS, *(headers or [])]
        self._what = what
        self._lock = anyio.Lock()
        self.attached = True
        self.detached_reason: str | None = None
        self._finished = False

    @property
    def resumable(self) -> bool:
        """Whether events are stored (and carry ids)."""
        return self._store is not None

    async def start(self, *, owner: str | None = None) -> None:
        """Send the response head, and the priming event (id, retry) of a resumable stream.

        The stream is opened in the store first: a store that is down is known before
        the head goes out, and the stream is then served without ids.
        """
        event_id = None
        store, stream_id = self._store, self._stream_id
        if store is not None and stream_id is not None:

            async def prime() -> str:
                await store.open_stream(stream_id, owner=owner or "")
                return await store.append(stream_id, None)

            event_id = await self._stored(prime)
        await self._write({"type": "http.response.start", "status": 200, "headers": self._headers})
        if event_id is not None:
            retry = f"retry: {self._retry_ms}\n".encode() if self._retry_ms is not None else b""
            await self._body(b"id: " + event_id.encode() + b"\n" + retry + b"data: \n\n")

    async def _stored(self, call: Callable[[], Awaitable[_T]]) -> _T | None:
        """One call to the store; if it fails, the stream goes on unstored (one log line)."""
        try:
            return await call()
        except Exception as exc:  # Redis down, or any store's failure: not the client's
            _logger.warning(
                "the event store failed (%s: %s): %s goes on without resumption",
                type(exc).__name__,
                exc,
                self._what,
            )
            self._store = None
            return None

    async def event(self, message: JSONObject, *, event_id: str | None = None) -> None:
        """Store (when resumable) and write one message as an event."""
        data = encode_outgoing(message)
        if data is None:
            return
        store, stream_id = self._store, self._stream_id
        if event_id is None and store is not None and stream_id is not None:
            event_id = await self._stored(lambda: store.append(stream_id, message))
        head = b"id: " + event_id.encode() + b"\n" if event_id is not None else b""
        await self._body(head + b"event: message\ndata: " + data + b"\n\n")

    async def raw_event(self, event_id: str | None, message: JSONObject | None) -> None:
        """Write an event read back from the store (a replay): never stored again."""
        if message is None:
            return  # a priming event carries nothing to replay
        await self.event(message, event_id=event_id)

    async def close(self, reason: str = "the server closed the stream") -> None:
        """End the HTTP response now; later events are only stored (SEP-1699 polling)."""
        async with self._lock:
            if self.attached and not self._finished:
                self._finished = True
                with anyio.move_on_after(self._stall):
                    await self._send({"type": "http.response.body", "body": b""})
            self.attached = False
            self.detached_reason = self.detached_reason or reason

    async def finish(self) -> None:
        """The stream's last event was written: mark it in the store, end the response."""
        store, stream_id = self._store, self._stream_id
        if store is not None and stream_id is not None:
            await self._stored(lambda: store.end_stream(stream_id))
        await self.close("the stream is complete")

    async def end_in_store(self) -> None:
        """Mark the stream ended in the store, even while cancelled (bounded, best effort)."""
        if self._store is None or self._stream_id is None:
            return
        with anyio.CancelScope(shield=True), anyio.move_on_after(self._stall):
            try:
                await self._store.end_stream(self._stream_id)
            except Exception:  # the store is down: the stream expires by itself
                _logger.warning("could not end SSE stream %s in the store", self._stream_id)

    def detach(self, reason: str) -> None:
        """Stop writing to this client (it went away); events are still stored."""
        if self.attached:
            self.attached = False
            self.detached_reason = reason

    async def _body(self, chunk: bytes) -> None:
        await self._write({"type": "http.response.body", "body": chunk, "more_body": True})

    async def _write(self, message: MutableMapping[str, Any]) -> None:
        async with self._lock:
            if not self.attached:
                return
            written = False
            with anyio.move_on_after(self._stall):
                try:
                    await self._send(message)
                    written = True
                except OSError as exc:  # the ASGI server's closed connection
                    self.detach(f"the connection failed: {exc}")
                    return
            if not written:
                _logger.warning(
                    "dropping a client that has not read %s for %g s (stream_stall_timeout)",
                    self._what,
                    self._stall,
                )
                self.detach("the client stopped reading")
