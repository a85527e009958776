"""The server of the fleet example: one `MCPServer`, every shared part in Redis.

Each instance (``python app.py serve PORT``) and each task worker (``mrtr worker
app:app``, from this folder) builds the same app from the environment:

- ``MRTR_KEYS``: the shared ``requestState`` keys, comma-separated hex (32+ bytes each;
  the first seals), so a leg sealed by one instance opens on any other;
- ``MRTR_REDIS``: the Redis URL for single-use states (`RedisReplayStore`), legacy SSE
  streams (`RedisEventStore`), tasks (`RedisTaskStore`) and the effect counters;
- ``MRTR_PREFIX``: the key prefix of this deployment (default ``fleet``);
- ``MRTR_INSTANCE``: this process's name, returned by the tools (to see the spread);
- ``MRTR_WORK``: seconds of "work" before each effect (default 0.05; a task works 4x),
  so that a process killed at random often dies in the middle of a leg or a body;
- ``MRTR_TTL``: seconds a sealed ``requestState`` stays valid (default 600; the chaos
  bench shortens it to retire a rotated key within its run);
- ``MRTR_DRAIN``: seconds an instance drains on SIGTERM (default 10: ``/readyz`` turns
  503, the legs in flight are answered, then it stops);
- ``MRTR_LEG_LEASE``: seconds a leg may run before a re-send of it takes it over
  (default 120): every effect of a leg is under ``ctx.once``, so the policy has
  ``take_over=True`` and a leg whose instance was killed after paying is finished by
  another instance, without paying again;
- ``MRTR_GATE``: when set, ``transfer``'s paying leg waits for the Redis key
  ``<prefix>:gate:<call_id>`` (at most a minute): how a test holds a leg in flight; and,
  when ``<prefix>:hold:<call_id>`` is set, it waits after paying too (for
  ``<prefix>:released:<call_id>``): how a test kills an instance between the effect and
  the answer.

The instances run no task body (``run_bodies=False``): the workers do.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import anyio
from pydantic import BaseModel

from mrtr.server import (
    AcceptedElicitation,
    Context,
    Elicit,
    MCPServer,
    RedisEventStore,
    RedisNotificationBus,
    RedisReplayStore,
    RedisTaskStore,
    RequestStateSecurity,
    TaskRunner,
)


class Confirm(BaseModel):
    ok: bool


async def gate(client: Any, key: str) -> None:
    """Until ``key`` exists in Redis (a test opens the gate), at most a minute."""
    with anyio.move_on_after(60):
        while not client.exists(key):  # noqa: ASYNC110 (a condition in another process)
            await anyio.sleep(0.02)


async def held(client: Any, prefix: str, call_id: str, gated: bool) -> None:
    """After paying, when a test set ``<prefix>:hold:<call_id>``: until it is released."""
    if gated and client.exists(f"{prefix}:hold:{call_id}"):
        await gate(client, f"{prefix}:released:{call_id}")


def build() -> tuple[MCPServer, Any]:
    """The app and its Redis client, from the environment."""
    import redis

    url = os.environ.get("MRTR_REDIS", "redis://127.0.0.1:6379/0")
    prefix = os.environ.get("MRTR_PREFIX", "fleet")
    instance = os.environ.get("MRTR_INSTANCE", f"pid{os.getpid()}")
    work = float(os.environ.get("MRTR_WORK", "0.05"))
    gated = bool(os.environ.get("MRTR_GATE"))
    client = redis.Redis.from_url(url, socket_timeout=10)
    security = RequestStateSecurity.from_env(  # the shared keys; a short one stops the start
        "MRTR_KEYS",
        ttl=float(os.environ.get("MRTR_TTL", "600")),
        single_use=True,  # and each leg's answer kept: a lost one can be asked for again
        replay_store=RedisReplayStore(client, prefix=f"{prefix}:replay"),
        take_over=True,  # a leg whose instance died is run again, its ctx.once marks kept
        running_lease=float(os.environ.get("MRTR_LEG_LEASE", "120")),
    )
    runner = TaskRunner(RedisTaskStore(client, prefix=f"{prefix}:tasks"), run_bodies=False)
    bus = RedisNotificationBus(client, stream=f"{prefix}:changes")  # task status, list changes
    app = MCPServer(
        "fleet",
        request_state_security=security,
        tasks=runner,
        notification_bus=bus,
        instance_id=instance,
    )

    def effect(call_id: str) -> None:
        pipe = client.pipeline(transaction=False)  # one round trip
        pipe.incr(f"{prefix}:effects:{call_id}")
        pipe.rpush(f"{prefix}:effected-by:{call_id}", instance)  # who, for a post-mortem
        pipe.execute()

    @app.tool()
    async def transfer(ctx: Context, call_id: str, amount: int, attempt: int = 0) -> str:
        """A multi-round call: confirm, then pay (once).

        The leg carrying the answer counts itself under (call, attempt): a leg the
        server ran twice (an answer applied twice) would count 2. Under ``ctx.once``,
        as every effect of a leg must be when legs are taken over (``take_over``): a
        leg run again after its instance died does not count it again, a replayed
        state does.
        """
        answer = await ctx.ask(Elicit(f"Transfer {amount}?", Confirm, key="confirm"))
        if not (isinstance(answer, AcceptedElicitation) and answer.data.ok):
            return f"{instance}: not transferred"
        if ctx.once("applied"):
            client.incr(f"{prefix}:applied:{call_id}:{attempt}")
        client.set(f"{prefix}:working:{call_id}", instance)
        if gated:
            await gate(client, f"{prefix}:gate:{call_id}")
        await anyio.sleep(work)
        if ctx.once("pay"):
            effect(call_id)
            await held(client, prefix, call_id, gated)  # where a test may kill the instance
        return f"{instance}: transferred {amount}"

    @app.tool(task="required")
    async def report(ctx: Context, call_id: str) -> str:
        """A task that asks midway, then publishes (once)."""
        answer = await ctx.ask(Elicit("Publish the report?", Confirm, key="publish"))
        if not (isinstance(answer, AcceptedElicitation) and answer.data.ok):
            return f"{instance}: not published"
        await anyio.sleep(work * 4)
        if ctx.once("publish"):
            effect(call_id)
        return f"{instance}: published"

    return app, client


def serve(port: int) -> None:
    """One instance on 127.0.0.1:``port`` (uvicorn); SIGTERM drains it first."""
    prefix = os.environ.get("MRTR_PREFIX", "fleet")
    app.run_http(
        port=port,
        event_store=RedisEventStore(redis_client, prefix=f"{prefix}:sse"),
        drain=float(os.environ.get("MRTR_DRAIN", "10")),
    )


app, redis_client = build() if "MRTR_KEYS" in os.environ else (None, None)

if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "serve":
        sys.exit("usage: python app.py serve PORT   (see fleet.py)")
    serve(int(sys.argv[2]))
