"""``--trace``: every JSON-RPC frame, both ways, on stderr (or ``--trace-file``), redacted.

`TracingTransport` wraps any `Transport` and prints each message it carries, marked ``→``
(to the server) or ``←`` (from it) with the time since the connection opened. Values that
may be secret are replaced before printing: ``requestState`` (shown as its length and a
short hash, since it is opaque and may carry server secrets) and any key that names a
token, password, secret or authorization.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import IO, Any

from mrtr.cli._safe import json_text
from mrtr.transports import JSONObject, RequestFailed, Transport

__all__ = ["TracingTransport", "redact_frame"]

_SECRET_KEY = re.compile(
    r"^(?!progress)\w*(token|password|secret|authorization|api[-_]?key|cookie)", re.I
)


def redact_frame(value: Any) -> Any:
    """A copy of a JSON-RPC message with secret-looking values replaced."""
    if isinstance(value, dict):
        shown: dict[str, Any] = {}
        for key, item in value.items():
            if key == "requestState" and isinstance(item, str):
                digest = hashlib.sha256(item.encode()).hexdigest()[:8]
                shown[key] = f"<{len(item.encode())} bytes sha256:{digest}>"
            elif _SECRET_KEY.search(str(key)) and isinstance(item, (str, int, float)):
                shown[key] = "<redacted>"
            else:
                shown[key] = redact_frame(item)
        return shown
    if isinstance(value, list):
        return [redact_frame(item) for item in value]
    return value


class TracingTransport(Transport):
    """A transport that prints what the transport inside it carries.

    Its lifespan is the inner transport's whole ``async with``, so the inner one keeps
    its own lifespan, whatever it runs in the background.
    """

    def __init__(
        self,
        inner: Transport,
        *,
        out: IO[str] | None = None,
        jsonl: str | None = None,
        scrub: Callable[[str], str] | None = None,
    ) -> None:
        self.inner = inner
        self._scrub = scrub or (lambda text: text)
        self._out = out
        self._jsonl_path = jsonl
        self._jsonl: IO[str] | None = None
        self._started = time.monotonic()

    def _print(self, arrow: str, message: Any) -> None:
        elapsed = (time.monotonic() - self._started) * 1000
        shown = redact_frame(message)
        if self._jsonl is not None:
            way = {"→": "send", "←": "receive"}.get(arrow, "failed")
            record = {"ms": round(elapsed, 3), "direction": way, "message": shown}
            self._jsonl.write(json.dumps(record, ensure_ascii=False) + "\n")  # a file
            self._jsonl.flush()
            return
        out = self._out or sys.stderr
        out.write(f"{arrow} {elapsed:8.1f} ms {json_text(shown)}\n")
        out.flush()

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        """Open the trace file, then enter the inner transport (its whole lifespan)."""
        if self._jsonl_path is not None:
            try:
                descriptor = os.open(self._jsonl_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            except OSError as exc:
                from mrtr.cli._exit import UsageError

                where = f"--trace-file {self._jsonl_path}"
                raise UsageError(f"{where}: cannot write: {exc.strerror or exc}") from None
            self._jsonl = os.fdopen(descriptor, "w", encoding="utf-8")
        self._started = time.monotonic()
        try:
            async with self.inner:
                yield
        finally:
            self._close_file()

    def _close_file(self) -> None:
        if self._jsonl is not None:
            self._jsonl.close()
            self._jsonl = None

    async def send(self, message: JSONObject) -> None:
        """Print, then send."""
        self._print("→", message)
        await self.inner.send(message)

    async def receive(self) -> JSONObject | RequestFailed:
        """Receive, then print."""
        message = await self.inner.receive()
        if isinstance(message, RequestFailed):
            failed = self._scrub(str(message.error))
            self._print("✗", {"id": message.request_id, "failed": failed})
        else:
            self._print("←", message)
        return message

    async def aclose(self) -> None:
        """Close the inner transport's connection (the trace file closes on exit)."""
        await self.inner.aclose()
