"""The stdio client against hostile servers: unusual lines, stray children, a full stderr."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from pathlib import Path

import anyio
import anyio.to_thread
import pytest

from mrtr import Client, StdioServerParameters
from mrtr.errors import ProcessExitedError, ProtocolError, RequestTimeoutError
from mrtr.transports import StdioTransport

if sys.platform != "win32":
    import fcntl

pytestmark = pytest.mark.anyio

HELPERS = Path(__file__).parents[1] / "helpers"
BOUND = 60  # generous: a slow shared machine starts Python subprocesses slowly


async def test_one_unusual_message_fails_at_most_its_own_request_over_stdio() -> None:
    params = StdioServerParameters(sys.executable, [str(HELPERS / "hostile_stdio_server.py")])
    # a line too deep to parse cannot be matched to its request: it is dropped and
    # logged, and that request times out; every other request is unaffected
    async with Client(params, read_timeout_seconds=5) as client:
        with anyio.fail_after(BOUND):
            tools = await client.list_tools()  # a valid schema nested 600 deep
            assert [tool.name for tool in tools.tools] == ["deep"]
            for name, error in (("bigint", ProtocolError), ("deep", RequestTimeoutError)):
                with pytest.raises(error):
                    await client.call_tool(name, {})
                result = await client.call_tool("plain", {})
                assert result.content[0].text == "called plain"  # type: ignore[union-attr]


async def test_the_depth_a_stdio_client_reads_is_a_knob() -> None:
    params = StdioServerParameters(sys.executable, [str(HELPERS / "hostile_stdio_server.py")])
    transport = StdioTransport(params, max_json_depth=64)  # the 600-deep listing is over it
    async with Client(transport, read_timeout_seconds=2) as client:
        with anyio.fail_after(BOUND):
            with pytest.raises(RequestTimeoutError):  # dropped, as a line too deep to parse
                await client.list_tools()
            result = await client.call_tool("plain", {})
            assert result.content[0].text == "called plain"  # type: ignore[union-attr]


async def test_answers_with_the_id_true_fail_the_connect_instead_of_hanging() -> None:
    server = str(HELPERS / "hostile_stdio_server.py")
    params = StdioServerParameters(sys.executable, [server, "--id-true"])
    with anyio.fail_after(BOUND), pytest.raises(ProtocolError, match="wrong type"):
        async with Client(params):
            pass  # pragma: no cover - the connect must fail


# -- processes left behind -----------------------------------------------------------------

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="process groups are POSIX")


async def wait_all_gone(lock_path: Path) -> None:
    """Return once no process holds the lock the forking server took (all have exited)."""
    with lock_path.open("w") as lock:
        with anyio.fail_after(BOUND):
            await anyio.to_thread.run_sync(
                fcntl.flock, lock.fileno(), fcntl.LOCK_EX, abandon_on_cancel=True
            )
        fcntl.flock(lock.fileno(), fcntl.LOCK_UN)


def forking_server(mode: str, lock_path: Path, *, via_shell: bool) -> StdioServerParameters:
    command = [sys.executable, str(HELPERS / "forking_server.py"), mode, str(lock_path)]
    if via_shell:  # `; exit 0` keeps the shell alive as the server's parent
        return StdioServerParameters("sh", ["-c", '"$0" "$@"; exit 0', *command])
    return StdioServerParameters(command[0], command[1:])


def kill_quietly(ready: object) -> None:
    """Kill what a failed test may have left behind (the pids the server announced)."""
    assert isinstance(ready, dict)
    for pid in ready["params"]["pids"]:
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@posix_only
async def test_closing_stops_a_server_behind_a_shell_and_everything_it_started(
    tmp_path: Path,
) -> None:
    lock_path = tmp_path / "lock"
    params = forking_server("linger", lock_path, via_shell=True)
    transport = StdioTransport(params, shutdown_timeout=1)
    async with transport:
        with anyio.fail_after(BOUND):
            ready = await transport.receive()  # the server holds the lock now
    try:
        await wait_all_gone(lock_path)
    finally:
        kill_quietly(ready)


@posix_only
async def test_a_server_that_exits_while_its_child_holds_stdout_is_noticed(
    tmp_path: Path,
) -> None:
    lock_path = tmp_path / "lock"
    transport = StdioTransport(forking_server("fork-and-exit", lock_path, via_shell=False))
    ready: object = None
    try:
        async with transport:
            with anyio.fail_after(BOUND):
                ready = await transport.receive()
                with pytest.raises(ProcessExitedError) as caught:
                    await transport.receive()
        assert caught.value.returncode == 3
        await wait_all_gone(lock_path)  # and the child went with it on close
    finally:
        if ready is not None:
            kill_quietly(ready)


# -- a stderr sink nobody drains -----------------------------------------------------------

STDERR_SERVER = StdioServerParameters(sys.executable, [str(HELPERS / "stdio_server.py")])


def drain(fd: int, into: list[bytes] | None = None) -> None:
    """Read a pipe until end of file (a thread's job), keeping what it read in ``into``."""
    while chunk := os.read(fd, 65536):
        if into is not None:
            into.append(chunk)


async def test_a_stderr_sink_nobody_drains_never_blocks_the_client() -> None:
    # the client's stderr is a pipe nobody reads (a parent that never drains it): the
    # server's 2 MB of stderr must not freeze the client's event loop
    read_fd, write_fd = os.pipe()
    sink = os.fdopen(write_fd, "w", encoding="utf-8")  # closed below
    rescued = threading.Event()

    def rescue() -> None:  # only if the loop froze: unblock it, so the test can fail
        rescued.set()
        drain(read_fd)

    watchdog = threading.Timer(BOUND, rescue)
    watchdog.start()
    written: list[bytes] = []
    drainer = threading.Thread(target=drain, args=(read_fd, written), daemon=True)
    lines = [f"line {n} " + "x" * 1000 for n in range(2000)]
    try:
        transport = StdioTransport(
            STDERR_SERVER, stderr=sink, shutdown_timeout=10, max_stderr_backlog=256 * 1024
        )
        async with transport:
            with anyio.fail_after(BOUND):
                request = {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "stderr",
                    "params": {"lines": lines},
                }
                await transport.send(request)
                response = await transport.receive()
            assert not rescued.is_set(), "the event loop was frozen by the stderr sink"
            assert isinstance(response, dict) and response["result"] == {"written": 2000}
            drainer.start()  # now let the sink's pending lines through, so closing is quick
    finally:
        watchdog.cancel()
        if drainer.ident is None and not rescued.is_set():
            drainer.start()
        sink.close()
        if drainer.ident is not None:
            drainer.join(BOUND)
        os.close(read_fd)
    # what did not fit in the backlog was dropped, and the sink was told
    text = b"".join(written).decode()
    assert "lines of server stderr dropped" in text
    assert len(text) < len("".join(lines))
