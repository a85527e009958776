"""An HTTP server drains on SIGTERM: readiness 503, the leg in flight answered, then exit.

A real server process (`MCPServer.run_http`, uvicorn) on loopback; its tool waits for a
file the test writes, so the SIGTERM lands mid-leg, and the test watches ``/readyz``.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import httpx

from mrtr import Client

SRC = Path(__file__).resolve().parents[2] / "src"
BOUND = 30.0  # generous: the machine may be loaded

SERVER = """
import pathlib, sys
import anyio
from mrtr.server import MCPServer

folder = pathlib.Path(sys.argv[2])
app = MCPServer("drain")

@app.tool()
async def slow() -> str:
    \"\"\"Answers once the test opens the gate.\"\"\"
    (folder / "started").touch()
    while not (folder / "gate").exists():
        await anyio.sleep(0.02)
    return "finished"

app.run_http(port=int(sys.argv[1]), drain=float(sys.argv[3]))
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def until(check: Callable[[], bool | Awaitable[bool]]) -> None:
    """Poll ``check()`` (sync or async) until true, within `BOUND`."""
    with anyio.fail_after(BOUND):
        while True:
            value = check()
            if not isinstance(value, bool):
                value = await value
            if value:
                return
            await anyio.sleep(0.02)


def serve(tmp_path: Path, drain: float) -> tuple[subprocess.Popen[bytes], int]:
    script = tmp_path / "server.py"
    script.write_text(SERVER)
    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
    }
    process = subprocess.Popen(
        [sys.executable, str(script), str(port), str(tmp_path), str(drain)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + BOUND
    while True:
        assert process.poll() is None, "the server exited before listening"
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return process, port
        except OSError:
            assert time.monotonic() < deadline, "the server did not listen"
            time.sleep(0.05)


def test_sigterm_mid_leg_drains_readiness_503_and_the_leg_is_answered(tmp_path: Path) -> None:
    process, port = serve(tmp_path, drain=60.0)
    base = f"http://127.0.0.1:{port}"
    readiness: list[int] = []

    async def main() -> None:
        async with httpx.AsyncClient(timeout=5) as http:
            assert (await http.get(f"{base}/readyz")).status_code == 200
            async with Client(f"{base}/mcp", read_timeout_seconds=BOUND) as client:
                answer: list[str] = []

                async def call() -> None:
                    result = await client.call_tool("slow", {})
                    answer.append(str(getattr(result.content[0], "text", "")))

                async with anyio.create_task_group() as group:
                    group.start_soon(call)
                    await until((tmp_path / "started").exists)
                    process.send_signal(signal.SIGTERM)

                    async def not_ready() -> bool:
                        status = (await http.get(f"{base}/readyz")).status_code
                        readiness.append(status)
                        return status == 503

                    await until(not_ready)
                    assert process.poll() is None  # still serving the leg
                    (tmp_path / "gate").touch()
                assert answer == ["finished"]

    try:
        anyio.run(main)
        process.wait(timeout=BOUND)  # drained, then stopped by itself
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert readiness[-1] == 503, readiness


def test_sigterm_when_idle_stops_at_once(tmp_path: Path) -> None:
    process, _ = serve(tmp_path, drain=60.0)
    try:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=BOUND)  # no leg in flight: the drain ends on its next tick
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_a_draining_instance_starts_no_new_task_body() -> None:
    from typing import Any

    from mrtr.server import MCPServer, MemoryTaskStore
    from mrtr.server._http._app import StreamableHTTPApp
    from mrtr.types import TASKS_EXTENSION

    app = MCPServer("tasked", task_store=MemoryTaskStore())

    @app.tool(task="required")
    async def job() -> str:
        """A task."""
        return "done"

    asgi = app.streamable_http_app()
    tasks = app.server.tasks
    assert isinstance(asgi, StreamableHTTPApp) and tasks is not None
    modern = "2026-07-28"
    meta = {
        "io.modelcontextprotocol/protocolVersion": modern,
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS_EXTENSION: {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
    }
    body: dict[str, Any] = {
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "job", "_meta": meta},
    }  # fmt: skip
    headers = {
        "MCP-Protocol-Version": modern,
        "Accept": "application/json, text/event-stream",
        "Mcp-Method": "tools/call",
        "Mcp-Name": "job",
    }

    async def main() -> None:
        async with (
            tasks.lifespan(),
            httpx.AsyncClient(
                transport=httpx.ASGITransport(app=asgi),  # type: ignore[arg-type]
                base_url="http://127.0.0.1",
            ) as http,
        ):
            before = await http.post("/mcp", json=body, headers=headers)
            assert "taskId" in before.json()["result"], before.text
            asgi.begin_drain()
            after = await http.post("/mcp", json=body, headers=headers)
            assert after.json()["error"]["code"] == -32000, after.text  # busy: retry elsewhere
            ready = await http.get("/readyz")
            assert ready.status_code == 503 and ready.json() == {"status": "draining"}

    anyio.run(main)
