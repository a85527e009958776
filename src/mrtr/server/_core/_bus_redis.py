"""`RedisNotificationBus`: changes carried between instances through a Redis stream.

A stream rather than pub/sub: a pub/sub message published while a subscriber is cut
off is gone, and a listen stream on that instance would never hear of the change. With
a stream (``XADD ... MAXLEN ~ n``) an instance that lost Redis for a while reads on from
the last entry it saw once it is back, up to the stream's length; and the reader is one
blocking ``XREAD`` on an ordinary connection, with nothing to resubscribe.

Redis down: each change still reaches this instance's own listeners at once (the hub
offers it before the bus sees it); the bus logs the outage once, keeps at most
``max_buffer`` changes to send (dropping the oldest, logged), retries with a backoff
capped at ``retry_cap`` seconds, and logs its return.
"""

from __future__ import annotations

import inspect
import json
import logging
import uuid
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import anyio
import anyio.to_thread

from mrtr._lazy import publish
from mrtr.server._defaults import (
    DEFAULT_BUS_MAX_BUFFER,
    DEFAULT_BUS_MAX_CHANGE_BYTES,
    DEFAULT_BUS_MAX_STREAM_LENGTH,
)

__all__ = ["RedisNotificationBus"]

_logger = logging.getLogger("mrtr.server.notify")

_METHODS = frozenset(
    {
        "notifications/tools/list_changed",
        "notifications/prompts/list_changed",
        "notifications/resources/list_changed",
        "notifications/resources/updated",
        "notifications/tasks",
    }
)
_FIRST_RETRY = 0.1


class RedisNotificationBus:
    """A `NotificationBus` over one Redis stream shared by every instance.

    Args:
        client: a ``redis.asyncio.Redis`` (asyncio servers) or a sync ``redis.Redis``,
            whose calls run in worker threads (asyncio and trio); give it a
            ``socket_timeout`` longer than ``block_ms``.
        stream: the stream's key, one per deployment (all instances of one server).
        max_buffer: changes kept to send while Redis is unreachable (oldest dropped).
        max_stream_length: about how many changes the stream keeps (``MAXLEN ~``): how
            far an instance that lost Redis can catch up.
        max_change_bytes: characters (as JSON) of the largest change sent or read; a
            larger one goes only to this instance's listeners.
        block_ms: how long one ``XREAD`` waits for news.
        retry_cap: the longest wait between two tries while Redis is unreachable.
        instance_id: this instance's name on the stream (default: a random one); its
            own changes read back are skipped.

    Raises:
        ValueError: a bound that is not positive.
    """

    def __init__(
        self,
        client: Any,
        *,
        stream: str = "mrtr:changes",
        max_buffer: int = DEFAULT_BUS_MAX_BUFFER,
        max_stream_length: int = DEFAULT_BUS_MAX_STREAM_LENGTH,
        max_change_bytes: int = DEFAULT_BUS_MAX_CHANGE_BYTES,
        block_ms: int = 1000,
        retry_cap: float = 5.0,
        instance_id: str | None = None,
    ) -> None:
        if min(max_buffer, max_stream_length, max_change_bytes, block_ms) < 1 or not (
            retry_cap > 0
        ):
            raise ValueError(
                "max_buffer, max_stream_length, max_change_bytes, block_ms and retry_cap "
                "must be positive"
            )
        self._client = client
        self.stream = stream
        self.max_buffer = max_buffer
        self.max_stream_length = max_stream_length
        self.max_change_bytes = max_change_bytes
        self.block_ms = block_ms
        self.retry_cap = retry_cap
        self.instance_id = instance_id or uuid.uuid4().hex
        self._async = inspect.iscoroutinefunction(getattr(client, "execute_command", None))
        self._outbox: deque[str] = deque()
        self._wakes: list[anyio.Event] = []  # one per connect (a server may run two shells)
        self._read_up_to: tuple[int, int] = (0, 0)  # the newest entry delivered
        self._down = False
        self._dropped = 0

    def publish(self, change: dict[str, Any]) -> None:
        """Queue a change for the other instances (never waits; bounded)."""
        text = json.dumps({"o": self.instance_id, "c": change}, separators=(",", ":"))
        if len(text) > self.max_change_bytes:
            _logger.warning(
                "a change of %d characters is over max_change_bytes: this instance only",
                len(text),
            )
            return
        if len(self._outbox) >= self.max_buffer:
            self._outbox.popleft()
            self._dropped += 1
            if self._dropped == 1:
                _logger.warning(
                    "the notification bus holds %d unsent changes: dropping the oldest "
                    "(other instances' listeners miss them)",
                    self.max_buffer,
                )
        self._outbox.append(text)
        for wake in self._wakes:
            wake.set()

    @asynccontextmanager
    async def connect(self, deliver: Callable[[dict[str, Any]], None]) -> AsyncIterator[None]:
        """Send this instance's changes and read the others' until the block ends.

        Reads from the stream's newest entry when it is entered (one quick try, so
        that what is published once the server serves is never missed; with Redis
        down, from when it is back).
        """
        last: Any = None
        try:
            with anyio.fail_after(self.block_ms / 1000):
                last = await self._newest()
        except Exception as exc:
            self._lost(exc)
        wake = [anyio.Event()]
        self._wakes.append(wake[0])
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._send_loop, wake)
                tg.start_soon(self._read_loop, deliver, last)
                try:
                    yield
                finally:
                    tg.cancel_scope.cancel()
        finally:
            self._wakes.remove(wake[0])
            await self._flush()

    async def _flush(self) -> None:
        """Send what is left, for ``block_ms`` at most.

        A stopping instance's last changes (a task that just finished) still reach the
        other instances.
        """
        deadline = anyio.current_time() + self.block_ms / 1000
        with anyio.CancelScope(shield=True, deadline=deadline):
            while self._outbox and not self._down:
                text = self._outbox.popleft()
                try:
                    await self._xadd(text)
                except Exception as exc:
                    self._lost(exc)

    async def _send_loop(self, wake: list[anyio.Event]) -> None:
        wait = _FIRST_RETRY
        while True:
            if not self._outbox:
                await wake[0].wait()
                self._wakes.remove(wake[0])
                wake[0] = anyio.Event()
                self._wakes.append(wake[0])
                continue
            text = self._outbox.popleft()  # taken: another connect's sender cannot resend it
            try:
                await self._send_through(text)
            except Exception as exc:
                if len(self._outbox) < self.max_buffer:
                    self._outbox.appendleft(text)
                wait = await self._retry_after(exc, wait)
                continue
            wait = _FIRST_RETRY
            self._back()

    async def _retry_after(self, exc: Exception, wait: float) -> float:
        """Say Redis is lost, wait `wait` seconds, and return the next wait (doubled, capped)."""
        self._lost(exc)
        await anyio.sleep(wait)
        return min(wait * 2, self.retry_cap)

    async def _send_through(self, text: str) -> None:
        """Send one change; a send under way finishes even if the bus stops meanwhile.

        A Lambda invocation stops its bus right after its change: a send cut mid-way may
        already be in Redis, and sent again by the flush it would arrive twice. Bounded
        by ``block_ms``; past it the change is kept for another try (then, at worst, twice).

        Raises:
            TimeoutError: Redis took longer than ``block_ms``.
            Exception: whatever the client raised.
        """
        deadline = anyio.current_time() + self.block_ms / 1000
        with anyio.CancelScope(shield=True, deadline=deadline) as scope:
            await self._xadd(text)
        if scope.cancelled_caught:
            raise TimeoutError(f"Redis took over {self.block_ms} ms to take a change")

    async def _xadd(self, text: str) -> None:
        """Put one change on the stream, trimmed to about ``max_stream_length`` entries."""
        await self._call(
            "xadd", self.stream, {"c": text}, maxlen=self.max_stream_length, approximate=True
        )

    async def _newest(self) -> Any:
        """The id of the stream's newest entry (older changes are not news)."""
        newest = await self._call("xrevrange", self.stream, count=1)
        return newest[0][0] if newest else "0-0"

    async def _read_loop(self, deliver: Callable[[dict[str, Any]], None], last: Any) -> None:
        wait = _FIRST_RETRY
        while True:
            try:
                if last is None:
                    last = await self._newest()
                reply = await self._call(
                    "xread", {self.stream: last}, count=256, block=self.block_ms
                )
            except Exception as exc:
                wait = await self._retry_after(exc, wait)
                continue
            wait = _FIRST_RETRY
            self._back()
            for _key, entries in reply or ():
                for entry_id, fields in entries:
                    last = entry_id
                    order = _order(entry_id)
                    if order <= self._read_up_to:
                        continue  # delivered already by another connect of this bus
                    self._read_up_to = order
                    change = self._change(fields)
                    if change is not None:
                        deliver(change)

    def _change(self, fields: Any) -> dict[str, Any] | None:
        """The change an entry carries, if it is another instance's and well formed."""
        raw = fields.get(b"c", fields.get("c")) if isinstance(fields, dict) else None
        if not isinstance(raw, (bytes, str)) or len(raw) > self.max_change_bytes:
            return None
        try:
            entry = json.loads(raw)
        except ValueError:
            return None
        if not isinstance(entry, dict) or entry.get("o") == self.instance_id:
            return None
        change = entry.get("c")
        if not isinstance(change, dict) or change.get("method") not in _METHODS:
            return None
        return change

    async def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        method = getattr(self._client, name)
        if self._async:
            return await method(*args, **kwargs)
        return await anyio.to_thread.run_sync(
            partial(method, *args, **kwargs), abandon_on_cancel=True
        )

    def _lost(self, exc: Exception) -> None:
        if not self._down:
            self._down = True
            _logger.warning(
                "the notification bus lost Redis (%s: %s): changes reach this instance's "
                "listeners only until it is back",
                type(exc).__name__,
                exc,
            )

    def _back(self) -> None:
        if self._down:
            self._down = False
            _logger.warning(
                "the notification bus reached Redis again (%d changes dropped meanwhile)",
                self._dropped,
            )
            self._dropped = 0


def _order(entry_id: Any) -> tuple[int, int]:
    """A stream entry id (``ms-seq``) as a pair that sorts as Redis orders them."""
    text = entry_id.decode("ascii") if isinstance(entry_id, bytes) else str(entry_id)
    ms, _, seq = text.partition("-")
    try:
        return int(ms), int(seq or 0)
    except ValueError:
        return (0, 0)


publish("mrtr.server", RedisNotificationBus)
