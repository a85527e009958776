"""Run the test server in a subprocess: ``python -m tests.server._serve stdio|http [port]``.

Environment: ``MRTR_TEST_KEYS`` (comma-separated hex secrets) shares keys; without it the
server seals with an ephemeral key. ``MRTR_TEST_NAME`` sets the server name.
``MRTR_TEST_REDIS`` (a URL) keeps SSE events in Redis under ``MRTR_TEST_PREFIX``;
``MRTR_TEST_STALL`` sets the stream stall timeout (seconds).
"""

from __future__ import annotations

import os
import sys

from mrtr.server import RequestStateSecurity
from tests.server._servers import make_server


def build():  # type: ignore[no-untyped-def]
    keys = os.environ.get("MRTR_TEST_KEYS")
    security = (
        RequestStateSecurity(keys=[bytes.fromhex(k) for k in keys.split(",")]) if keys else None
    )
    return make_server(os.environ.get("MRTR_TEST_NAME", "Provisioner"), security=security)


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    server = build()
    if mode == "stdio":
        server.run_stdio()
        return
    import socket

    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    print(sock.getsockname()[1], flush=True)  # the test reads the port from here
    app_options: dict[str, object] = {}
    redis_url = os.environ.get("MRTR_TEST_REDIS")
    if redis_url:  # instances sharing one prefix resume each other's streams
        import redis

        from mrtr.server import RedisEventStore

        client = redis.Redis.from_url(redis_url, socket_timeout=10)
        prefix = os.environ.get("MRTR_TEST_PREFIX", "mrtr:test")
        app_options["event_store"] = RedisEventStore(client, prefix=prefix)
    stall = os.environ.get("MRTR_TEST_STALL")
    if stall:
        app_options["stream_stall_timeout"] = float(stall)
    app = server.streamable_http_app(**app_options)  # type: ignore[arg-type]
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
