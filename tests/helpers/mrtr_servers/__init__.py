"""mrtr's own servers as peers: one module per server, and the two knobs they share.

- `provisioner`: the low-level `Server` with a tool of every kind, for both eras (the
  server tests in process; the official client over stdio and HTTP);
- `approvals`: tools that ask, with a tally of retries (the paused-call tests);
- `cli`: every kind of input request and result (the command-line tests);
- `cli_hostile`: every string it can choose is a terminal trap (the command-line tests);
- `mcpserver`: the high-level `MCPServer` parity cases (the official client).

Each takes its transport as its first argument (``stdio`` or ``http``, which prints
``READY <url>``: `tests.helpers.launch`) and decides its sealing with `sealing`; the era
is the client's choice, and every server answers both. `over_http` runs one in a
subprocess for a test.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any

from mrtr.server import RequestStateSecurity
from tests.helpers.launch import module_command, running, serve_http

PROVISIONER = "tests.helpers.mrtr_servers.provisioner"
MCPSERVER = "tests.helpers.mrtr_servers.mcpserver"


def sealing(keys: str | None, *, redis_url: str | None = None) -> RequestStateSecurity | None:
    """How a peer seals ``requestState``: shared keys, single-use states, or the default.

    ``keys`` is comma-separated hex secrets shared by every process given them (a call
    paused on one resumes on another). ``redis_url`` makes every state single-use, with
    the nonces in that Redis. ``None`` leaves the server's default: an ephemeral key.
    """
    secrets = [bytes.fromhex(key) for key in keys.split(",")] if keys else None
    if redis_url:
        import redis

        from mrtr.server import RedisReplayStore

        replay = RedisReplayStore(redis.Redis.from_url(redis_url, socket_timeout=10))
        return RequestStateSecurity(keys=secrets, single_use=True, replay_store=replay)
    return RequestStateSecurity(keys=secrets) if secrets else None


def serve(server: Any, transport: str, **app_options: Any) -> None:
    """Serve an mrtr ``Server`` or ``MCPServer`` on ``transport`` until it ends."""
    if transport == "stdio":
        server.run_stdio()
    else:
        serve_http(server.streamable_http_app(**app_options))


@contextmanager
def over_http(
    module: str, *, stderr: IO[Any] | None = None, env: dict[str, str] | None = None
) -> Iterator[str]:
    """The server ``module`` over HTTP in a subprocess (``env`` added); yields its URL."""
    with running(module_command(module, "http"), env=env, stderr=stderr) as url:
        yield url
