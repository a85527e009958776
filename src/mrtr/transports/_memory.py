"""An in-memory transport pair that still frames every message as JSON text.

Tests and in-process servers use it: each `send` serializes the message to compact UTF-8
JSON and the other end parses it again, so the size cap, the JSON framing and the
drop-what-does-not-parse rule run exactly as they do over stdio.

Each direction is a `_Channel`: a bounded FIFO of frames with wake-up events created
only when someone has to wait. (anyio's memory object streams do the same job with a
checkpoint and some bookkeeping per receive, which a channel of frames does not need;
the figures are in docs/benchmarks.md.)
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import anyio
import anyio.lowlevel

from mrtr._lazy import publish
from mrtr._wire._speedups import event_factory
from mrtr._wire.framing import decode_message, encode_echoing
from mrtr.errors import TransportError
from mrtr.transports._base import DEFAULT_MAX_MESSAGE_SIZE, JSONObject, RequestFailed, Transport
from mrtr.transports._oversize import HEAD_BYTES, TAIL_BYTES, oversized_failure

__all__ = ["DEFAULT_MAX_BUFFERED_MESSAGES", "MemoryTransport", "create_memory_transport_pair"]

_logger = logging.getLogger("mrtr.transports.memory")

# Each direction buffers up to this many messages, then `send` waits for the peer to read.
# Why bounded: a runaway producer (a test peer in a loop, a server streaming progress)
# must meet back-pressure instead of growing memory without limit.
# Why not zero (a rendezvous, as a bare anyio stream pair would default to): a
# request/response exchange has moments where both ends send at once (the client sends a
# request while the server sends a notification, or both answer each other's pings from
# their reader loops). With no buffer both sends wait for a receive that never comes and
# the exchange deadlocks. With a buffer, a deadlock needs both directions to hold this
# many unread messages while neither end reads, far beyond what any exchange has in
# flight, while the memory held stays bounded (count x max_message_size).
DEFAULT_MAX_BUFFERED_MESSAGES = 1024


def create_memory_transport_pair(
    *,
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    max_buffered_messages: int = DEFAULT_MAX_BUFFERED_MESSAGES,
) -> tuple[MemoryTransport, MemoryTransport]:
    """Create two connected transports: what one end sends, the other receives.

    The ends are connected as soon as they are created; `async with` on each of them
    only guarantees it is closed at the end.

    Args:
        max_message_size: the cap in bytes on one message, checked by the receiving end.
        max_buffered_messages: how many messages each direction holds before `send`
            waits for the peer to read (see the module comment on why it is bounded).

    Returns:
        The two ends, conventionally ``(client_end, server_end)``.

    Raises:
        ValueError: a limit is not positive.
    """
    if max_message_size < 1 or max_buffered_messages < 1:
        raise ValueError("max_message_size and max_buffered_messages must be positive")
    a_to_b = _Channel(max_buffered_messages)
    b_to_a = _Channel(max_buffered_messages)
    first = MemoryTransport(a_to_b, b_to_a, max_message_size=max_message_size)
    second = MemoryTransport(b_to_a, a_to_b, max_message_size=max_message_size)
    return first, second


def post_frame(end: MemoryTransport, frame: bytes) -> bool:
    """Hand the peer one encoded frame now if its buffer has room, never waiting.

    ``False`` when the buffer is full (then `MemoryTransport.send_raw` waits for room).
    For the in-process server, which checks its own cancellation first: this is no
    checkpoint.

    Raises:
        TransportError: this end is closed, or the peer closed its end.
    """
    return end._post_frame(frame)


class _PeerClosed(Exception):
    """The other end of the channel is closed (and, for a receive, nothing is left)."""


class _SelfClosed(Exception):
    """This end of the channel is closed."""


class _Channel:
    """One direction of a pair: a FIFO of at most `capacity` frames.

    `send` waits while it is full, `receive` while it is empty; each wait is woken by
    the other side or by either end closing. Frames sent before the sending end closed
    are still delivered.
    """

    __slots__ = (
        "_buffer",
        "_capacity",
        "_new_event",
        "_readable",
        "_receiver_closed",
        "_sender_closed",
        "_writable",
    )

    def __init__(self, capacity: int) -> None:
        self._buffer: deque[bytes] = deque()
        self._capacity = capacity
        self._sender_closed = False
        self._receiver_closed = False
        self._readable: anyio.Event | None = None
        self._writable: anyio.Event | None = None
        self._new_event: Callable[[], anyio.Event] | None = None

    def post(self, frame: bytes) -> bool:
        """Queue one frame if there is room now (``False`` if full), never waiting.

        For a caller that has just checked its own cancellation: no checkpoint here.

        Raises:
            _SelfClosed: the sending end is closed.
            _PeerClosed: the receiving end is closed.
        """
        if self._sender_closed:
            raise _SelfClosed
        if self._receiver_closed:
            raise _PeerClosed
        if len(self._buffer) >= self._capacity:
            return False
        self._buffer.append(frame)
        self._wake_receiver()
        return True

    async def send(self, frame: bytes) -> None:
        """Queue one frame, waiting while the buffer is full.

        Raises:
            _SelfClosed: the sending end is closed.
            _PeerClosed: the receiving end is closed.
        """
        await anyio.lowlevel.checkpoint_if_cancelled()
        while True:
            if self._sender_closed:
                raise _SelfClosed
            if self._receiver_closed:
                raise _PeerClosed
            if len(self._buffer) < self._capacity:
                self._buffer.append(frame)
                self._wake_receiver()
                return
            if self._writable is None:
                self._writable = self._event()
            await self._writable.wait()

    async def receive(self) -> bytes:
        """Take the next frame, waiting while there is none (no checkpoint if there is).

        Raises:
            _SelfClosed: the receiving end is closed.
            _PeerClosed: the sending end is closed and every frame was taken.
        """
        await anyio.lowlevel.checkpoint_if_cancelled()
        while True:
            if self._receiver_closed:
                raise _SelfClosed
            if self._buffer:
                frame = self._buffer.popleft()
                self._wake_senders()
                return frame
            if self._sender_closed:
                raise _PeerClosed
            if self._readable is None:
                self._readable = self._event()
            await self._readable.wait()

    def close_sender(self) -> None:
        self._sender_closed = True
        self._wake_all()

    def close_receiver(self) -> None:
        self._receiver_closed = True
        self._buffer.clear()
        self._wake_all()

    def _wake_all(self) -> None:
        self._wake_receiver()
        self._wake_senders()

    def _wake_receiver(self) -> None:
        event, self._readable = self._readable, None
        if event is not None:
            event.set()

    def _wake_senders(self) -> None:
        event, self._writable = self._writable, None
        if event is not None:
            event.set()

    def _event(self) -> anyio.Event:
        if self._new_event is None:
            self._new_event = event_factory()
        return self._new_event()


class MemoryTransport(Transport):
    """One end of an in-memory connection; build a pair with `create_memory_transport_pair`.

    The constructor is internal: it takes the two channels the pair factory wires up.
    """

    def __init__(self, outgoing: _Channel, incoming: _Channel, *, max_message_size: int) -> None:
        self._outgoing = outgoing
        self._incoming = incoming
        self._max_message_size = max_message_size
        self._closed_reason: str | None = None
        self._entered = False

    @property
    def max_message_size(self) -> int:
        """The cap in bytes on one incoming message."""
        return self._max_message_size

    @property
    def closed(self) -> bool:
        """Whether this end is closed (by `aclose` or after an oversized message)."""
        return self._closed_reason is not None

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        """Hold the transport open; leaving closes this end (the pair is already connected)."""
        # The pair is connected from the start: the lifespan only checks and closes.
        self._check_open()
        if self._entered:
            raise TransportError("the in-memory transport is already open")
        self._entered = True
        try:
            yield
        finally:
            self._close("the in-memory transport is closed")

    async def send(self, message: JSONObject) -> None:
        """Serialize one message to JSON and hand it to the peer.

        Waits while the peer has `max_buffered_messages` unread messages.

        Raises:
            TransportError: this end is closed, or the peer closed its end.
            TypeError: the message is not a dict or is not JSON-serializable.
            ValueError: the message holds NaN or an infinity.
        """
        self._check_open()
        await self._send_frame(encode_echoing(message))

    async def send_raw(self, data: bytes | str) -> None:
        """Hand the peer one frame of raw text, bypassing serialization.

        For tests of how the receiving side copes with bad input (invalid JSON, a
        non-object, an oversized message): the peer applies its size cap and parsing.

        Raises:
            TransportError: this end is closed, or the peer closed its end.
        """
        self._check_open()
        await self._send_frame(data.encode("utf-8") if isinstance(data, str) else bytes(data))

    def _post_frame(self, frame: bytes) -> bool:
        self._check_open()
        try:
            return self._outgoing.post(frame)
        except _PeerClosed:
            raise TransportError("the peer closed the in-memory connection") from None
        except _SelfClosed:
            raise TransportError(self._closed_message()) from None

    async def _send_frame(self, frame: bytes) -> None:
        try:
            await self._outgoing.send(frame)
        except _PeerClosed:
            raise TransportError("the peer closed the in-memory connection") from None
        except _SelfClosed:
            raise TransportError(self._closed_message()) from None

    async def receive(self) -> JSONObject | RequestFailed:
        """Return the next message from the peer.

        Messages the peer sent before closing are still delivered; a frame that does not
        parse as a JSON object is logged (logger ``mrtr.transports.memory``) and skipped.

        Raises:
            TransportError: the peer closed its end and everything it sent was read, or
                this end is closed.
        """
        while True:
            self._check_open()
            try:
                frame = await self._incoming.receive()
            except _PeerClosed:
                raise TransportError("the peer closed the in-memory connection") from None
            except _SelfClosed:
                raise TransportError(self._closed_message()) from None
            if len(frame) > self._max_message_size:
                failed = oversized_failure(
                    frame[:HEAD_BYTES],
                    frame[-TAIL_BYTES:],
                    len(frame),
                    self._max_message_size,
                    logger=_logger,
                )
                if failed is not None:
                    return failed
                continue
            message = decode_message(frame, logger=_logger)
            if message is not None:
                return message

    async def aclose(self) -> None:
        """Close this end; the peer's `receive` then fails once it has read what was sent.

        Safe to call more than once. A `receive` waiting on this end fails with
        `TransportError`.
        """
        self._close("the in-memory transport is closed")

    def _close(self, reason: str) -> None:
        if self._closed_reason is None:
            self._closed_reason = reason
        self._outgoing.close_sender()
        self._incoming.close_receiver()

    def _closed_message(self) -> str:
        return self._closed_reason or "the in-memory transport is closed"

    def _check_open(self) -> None:
        if self._closed_reason is not None:
            raise TransportError(self._closed_reason)


publish("mrtr.transports", MemoryTransport, create_memory_transport_pair)
