"""A uvicorn server that drains on SIGTERM before it stops (imported only by `run_http`).

uvicorn stops listening at the first SIGTERM: a balancer's next probe is refused, and
legs it sends meanwhile fail. Here SIGTERM first turns readiness to 503 (the balancer
stops sending new legs) and keeps serving until the POSTs in flight are answered or
``drain`` seconds passed; then uvicorn's own graceful shutdown runs (the lifespan ends:
task bodies stop, leases are released). A second SIGTERM, or SIGINT, stops at once.
"""

from __future__ import annotations

import signal
import time
from types import FrameType

import uvicorn

from ._app import StreamableHTTPApp

__all__ = ["DrainingServer"]


class DrainingServer(uvicorn.Server):
    """`uvicorn.Server` whose SIGTERM drains ``app`` for up to ``drain`` seconds first."""

    def __init__(self, config: uvicorn.Config, app: StreamableHTTPApp, drain: float) -> None:
        super().__init__(config)
        self._app = app
        self._drain = drain
        self._deadline: float | None = None

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        """The signal handler: a first SIGTERM starts the drain; anything else stops."""
        if sig == signal.SIGTERM and self._deadline is None and self._drain > 0:
            self._deadline = time.monotonic() + self._drain
            self._app.begin_drain()
            return
        super().handle_exit(sig, frame)

    async def on_tick(self, counter: int) -> bool:
        """Every tenth of a second: end the drain once no leg is in flight, or at its end."""
        draining = self._deadline is not None and not self.should_exit
        if draining and (self._app.in_flight == 0 or time.monotonic() >= (self._deadline or 0)):
            super().handle_exit(signal.SIGTERM, None)
        return await super().on_tick(counter)
