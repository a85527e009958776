"""The app a fleet test serves and runs workers for (``mrtr worker tests...fleet_app:app``).

Configured from the environment so that a subprocess builds the same app: the Redis URL
(``MRTR_TEST_REDIS``), the key prefix (``MRTR_TEST_PREFIX``) and the shared requestState
key (``MRTR_TEST_KEY``, hex). Its ``charge`` tool counts its effect in Redis.
"""

from __future__ import annotations

import os
from typing import Any

from pydantic import BaseModel

from mrtr.server import (
    AcceptedElicitation,
    Context,
    Elicit,
    MCPServer,
    RedisTaskStore,
    RequestStateSecurity,
    TaskRunner,
)


class Ok(BaseModel):
    ok: bool


def build(redis_url: str, prefix: str, key_hex: str, *, run_bodies: bool = False) -> MCPServer:
    """One instance (``run_bodies=False``) or, for a worker, the same app."""
    import redis

    client: Any = redis.Redis.from_url(redis_url, socket_timeout=10)
    runner = TaskRunner(RedisTaskStore(client, prefix=prefix), run_bodies=run_bodies)
    security = RequestStateSecurity(keys=[bytes.fromhex(key_hex)])
    app = MCPServer("fleet", tasks=runner, request_state_security=security)

    @app.tool(task="required")
    async def charge(ctx: Context, order: str) -> str:
        """Charge once, then ask whether to ship."""
        if ctx.once("charge"):
            client.incr(f"{prefix}:effects:{order}")
        answer = await ctx.ask(Elicit("Ship it?", Ok, key="ship"))
        assert isinstance(answer, AcceptedElicitation)
        return f"charged {order}, ship={answer.data.ok}"

    return app


def _from_env() -> MCPServer | None:
    url = os.environ.get("MRTR_TEST_REDIS")
    if not url:
        return None
    return build(url, os.environ["MRTR_TEST_PREFIX"], os.environ["MRTR_TEST_KEY"])


app = _from_env()
