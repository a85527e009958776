from __future__ import annotations

import io
import logging
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from mrtr.errors import MessageTooLargeError, ProcessExitedError, TransportError
from mrtr.transports import (
    RequestFailed,
    StdioServerParameters,
    StdioTransport,
    Transport,
    default_environment,
)

pytestmark = pytest.mark.anyio

SERVER = str(Path(__file__).parents[1] / "helpers" / "stdio_server.py")
TIMEOUT = 30  # generous: a slow shared machine starts Python subprocesses slowly


def server_params(**kwargs: Any) -> StdioServerParameters:
    return StdioServerParameters(sys.executable, [SERVER], **kwargs)


def request(method: str, params: dict[str, Any] | None = None, id: int = 1) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def same_directory(a: str | Path, b: str | Path) -> bool:
    return Path(a).resolve() == Path(b).resolve()


async def call(transport: Transport, method: str, params: dict[str, Any] | None = None) -> Any:
    await transport.send(request(method, params))
    response = await transport.receive()
    assert isinstance(response, dict)
    return response["result"]


async def test_echo_round_trip_with_non_ascii_and_nesting() -> None:
    params = {"text": "héllo 日本 😀", "nested": {"list": [1, 2.5, None, True, {"x": "\n"}]}}
    lines: list[str] = []
    async with StdioTransport(server_params(), stderr=lines.append) as transport:
        with anyio.fail_after(TIMEOUT):
            assert await call(transport, "echo", params) == params
            assert await call(transport, "echo", {"second": 2}) == {"second": 2}
        assert transport.pid is not None
    assert transport.returncode == 0  # it exited on its own when stdin closed
    assert lines == []


async def test_send_rejects_what_json_cannot_carry() -> None:
    async with StdioTransport(server_params()) as transport:
        with anyio.fail_after(TIMEOUT):
            with pytest.raises(ValueError):
                await transport.send(request("echo", {"n": float("nan")}))
            with pytest.raises(ValueError):
                await transport.send(request("echo", {"n": float("-inf")}))
            with pytest.raises(TypeError):
                await transport.send(request("echo", {"o": object()}))
            assert await call(transport, "echo", {"still": "up"}) == {"still": "up"}


async def test_concurrent_sends_are_not_interleaved() -> None:
    async with StdioTransport(server_params()) as transport:
        with anyio.fail_after(TIMEOUT):
            payload = "x" * 100_000  # larger than a pipe buffer: writes take several steps

            async def sender(start: int) -> None:
                for i in range(start, start + 5):
                    await transport.send(request("echo", {"i": i, "p": payload}, id=i))

            seen: set[int] = set()

            async def reader() -> None:
                for _ in range(10):
                    message = await transport.receive()
                    assert isinstance(message, dict)
                    assert message["result"]["p"] == payload
                    seen.add(message["id"])

            # a reader runs meanwhile: the echoes fill the stdout pipe otherwise
            async with anyio.create_task_group() as tg:
                tg.start_soon(reader)
                tg.start_soon(sender, 0)
                tg.start_soon(sender, 100)
    assert seen == {0, 1, 2, 3, 4, 100, 101, 102, 103, 104}


async def test_garbage_lines_are_logged_and_dropped(caplog: pytest.LogCaptureFixture) -> None:
    async with StdioTransport(server_params()) as transport:
        with anyio.fail_after(TIMEOUT), caplog.at_level(logging.WARNING, "mrtr.transports"):
            assert await call(transport, "garbage") == {"after": "garbage"}
    dropped = [r for r in caplog.records if r.name == "mrtr.transports.stdio"]
    # not json, a list, a string, a broken object, invalid UTF-8; blank lines are silent
    assert len(dropped) == 5
    assert all("dropping" in r.getMessage() for r in dropped)


async def test_server_dying_mid_call_names_the_exit_code() -> None:
    lines: list[str] = []
    async with StdioTransport(server_params(), stderr=lines.append) as transport:
        with anyio.fail_after(TIMEOUT):
            await transport.send(request("exit", {"code": 3}))
            with pytest.raises(ProcessExitedError) as info:
                await transport.receive()
            assert info.value.returncode == 3
            assert "exited with code 3" in str(info.value)
            assert isinstance(info.value, TransportError)
            # the server's last words reached the sink before the error was raised
            assert lines == ["dying now"]
            with pytest.raises(ProcessExitedError):
                await transport.receive()
            with pytest.raises(TransportError):
                await transport.send(request("echo"))


async def test_lines_written_before_death_are_delivered_first() -> None:
    first = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}}
    second = {"jsonrpc": "2.0", "id": 1, "result": {"final": True}}
    partial = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"x": 1}}
    params = {"code": 3, "messages": [first, second], "partial": partial}
    async with StdioTransport(server_params(), stderr=lambda line: None) as transport:
        with anyio.fail_after(TIMEOUT):
            await transport.send(request("exit", params))
            assert await transport.receive() == first
            assert await transport.receive() == second
            assert await transport.receive() == partial
            with pytest.raises(ProcessExitedError) as info:
                await transport.receive()
    assert info.value.returncode == 3


async def test_killed_server_reports_the_signal() -> None:
    async with StdioTransport(server_params()) as transport:
        with anyio.fail_after(TIMEOUT):
            assert await call(transport, "echo", {}) == {}
            waiting = anyio.Event()
            errors: list[ProcessExitedError] = []

            async def reader() -> None:
                waiting.set()
                with pytest.raises(ProcessExitedError) as info:
                    await transport.receive()
                errors.append(info.value)

            async with anyio.create_task_group() as tg:
                tg.start_soon(reader)
                await waiting.wait()
                assert transport.pid is not None
                os.kill(transport.pid, signal.SIGKILL)
    assert errors[0].returncode == -signal.SIGKILL
    assert "signal 9" in str(errors[0])


@pytest.mark.parametrize(
    ("ignore_sigterm", "expected"), [(False, -signal.SIGTERM), (True, -signal.SIGKILL)]
)
async def test_server_ignoring_stdin_close_is_terminated_then_killed(
    ignore_sigterm: bool, expected: int
) -> None:
    transport = StdioTransport(server_params(), shutdown_timeout=0.5)
    with anyio.fail_after(TIMEOUT):
        async with transport:
            result = await call(transport, "linger", {"ignore_sigterm": ignore_sigterm})
            assert result == {"lingering": True}
    assert transport.returncode == expected


async def test_huge_notification_is_dropped_and_the_connection_lives(
    caplog: pytest.LogCaptureFixture,
) -> None:
    transport = StdioTransport(server_params(), max_message_size=1000, shutdown_timeout=5)
    with anyio.fail_after(TIMEOUT):
        async with transport:
            await transport.send(request("huge", {"size": 5_000_000}))
            # skipped without being held, then the next message arrives as usual
            assert await call(transport, "echo", {"after": 1}) == {"after": 1}
    assert "max_message_size" in caplog.text
    assert "cannot be attributed" in caplog.text
    assert transport.returncode == 0


@pytest.mark.parametrize("id_last", [False, True])
async def test_huge_result_fails_only_its_own_request(id_last: bool) -> None:
    transport = StdioTransport(server_params(), max_message_size=1000, shutdown_timeout=5)
    with anyio.fail_after(TIMEOUT):
        async with transport:
            message = request("huge_result", {"size": 3_000_000, "id_last": id_last})
            await transport.send(message)
            failed = await transport.receive()
            assert isinstance(failed, RequestFailed)
            assert failed.request_id == message["id"]
            assert isinstance(failed.error, MessageTooLargeError)
            assert failed.error.limit == 1000
            assert failed.error.size > 3_000_000
            assert "max_message_size" in str(failed.error)
            # the connection lives on
            assert await call(transport, "echo", {"small": True}) == {"small": True}


async def test_line_exactly_at_the_cap_is_accepted() -> None:
    message = request("echo", {"pad": ""})
    async with StdioTransport(server_params(), max_message_size=10_000) as transport:
        with anyio.fail_after(TIMEOUT):
            await transport.send(message)
            response = await transport.receive()
            assert isinstance(response, dict)
            size = len(
                b'{"jsonrpc": "2.0", "id": 1, "result": {"pad": ""}}'
            )  # the server's own (non-compact) formatting
            assert size < 10_000
    small = StdioTransport(server_params(), max_message_size=size)
    async with small:
        with anyio.fail_after(TIMEOUT):
            assert await call(small, "echo", {"pad": ""}) == {"pad": ""}
    smaller = StdioTransport(server_params(), max_message_size=size - 1)
    async with smaller:
        with anyio.fail_after(TIMEOUT):
            await smaller.send(message)
            failed = await smaller.receive()
            assert isinstance(failed, RequestFailed)
            assert isinstance(failed.error, MessageTooLargeError)


async def test_stderr_goes_to_a_callable_sink() -> None:
    lines: list[str] = []
    async with StdioTransport(server_params(), stderr=lines.append) as transport:
        with anyio.fail_after(TIMEOUT):
            written = ["first", "second: é", ""]
            assert await call(transport, "stderr", {"lines": written}) == {"written": 3}
    # aclose passes on everything the server wrote before it exited
    assert lines == ["first", "second: é", ""]


async def test_stderr_goes_to_a_file_sink() -> None:
    sink = io.StringIO()
    async with StdioTransport(server_params(), stderr=sink) as transport:
        with anyio.fail_after(TIMEOUT):
            await call(transport, "stderr", {"lines": ["to a file"]})
    assert sink.getvalue() == "to a file\n"


async def test_stderr_defaults_to_sys_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    async with StdioTransport(server_params()) as transport:
        with anyio.fail_after(TIMEOUT):
            await call(transport, "stderr", {"lines": ["to our stderr"]})
    assert capsys.readouterr().err == "to our stderr\n"


async def test_a_failing_sink_does_not_break_the_connection(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def sink(line: str) -> None:
        raise OSError("disk full")

    async with StdioTransport(server_params(), stderr=sink) as transport:
        with anyio.fail_after(TIMEOUT), caplog.at_level(logging.ERROR, "mrtr.transports"):
            await call(transport, "stderr", {"lines": ["a", "b"]})
            assert await call(transport, "echo", {"still": "alive"}) == {"still": "alive"}
    assert any("sink failed" in r.getMessage() for r in caplog.records)


async def test_environment_is_a_safe_subset_plus_env(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("MRTR_TEST_SECRET_TOKEN", "do-not-leak")
    params = server_params(env={"MRTR_TEST_EXTRA": "yes"}, cwd=tmp_path)
    async with StdioTransport(params) as transport:
        with anyio.fail_after(TIMEOUT):
            result = await call(transport, "env")
    env = result["env"]
    assert env["MRTR_TEST_EXTRA"] == "yes"
    assert "MRTR_TEST_SECRET_TOKEN" not in env
    assert env.get("PATH") == os.environ.get("PATH")
    assert same_directory(result["cwd"], tmp_path)
    assert "MRTR_TEST_SECRET_TOKEN" not in default_environment()


def test_default_environment_skips_shell_functions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHELL", "() { :; }")
    monkeypatch.setenv("HOME", "/home/somebody")
    env = default_environment()
    assert "SHELL" not in env
    assert env["HOME"] == "/home/somebody"


def test_parameters_are_frozen() -> None:
    params = StdioServerParameters("server")
    assert list(params.args) == []
    assert params.env is None
    assert params.cwd is None
    with pytest.raises(AttributeError):
        params.command = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        StdioServerParameters("server", "--one-string")


def test_importing_transports_does_not_import_httpx() -> None:
    code = "import sys, mrtr.transports; sys.exit('httpx' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


async def test_command_not_found_names_the_command() -> None:
    transport = StdioTransport(StdioServerParameters("mrtr-no-such-command-xyz"))
    with pytest.raises(TransportError, match="mrtr-no-such-command-xyz"):
        await transport.__aenter__()
    with pytest.raises(TransportError):
        await transport.send(request("echo"))
    await transport.aclose()


async def test_bad_working_directory_is_a_transport_error(tmp_path: Path) -> None:
    transport = StdioTransport(server_params(cwd=tmp_path / "missing"))
    with pytest.raises(TransportError, match="could not start"):
        async with transport:
            pass


async def test_lifecycle_errors() -> None:
    transport = StdioTransport(server_params())
    with pytest.raises(TransportError, match="not open"):
        await transport.send(request("echo"))
    with pytest.raises(TransportError, match="not open"):
        await transport.receive()
    with anyio.fail_after(TIMEOUT):
        async with transport:
            with pytest.raises(TransportError, match="only once"):
                await transport.__aenter__()
        await transport.aclose()  # twice is fine
    with pytest.raises(TransportError, match="closed"):
        await transport.send(request("echo"))
    with pytest.raises(TransportError, match="closed"):
        await transport.receive()


async def test_closing_fails_a_waiting_receive_promptly() -> None:
    transport = StdioTransport(server_params())
    errors: list[TransportError] = []
    waiting = anyio.Event()

    async def reader() -> None:
        waiting.set()
        with pytest.raises(TransportError) as info:
            await transport.receive()
        errors.append(info.value)

    with anyio.fail_after(TIMEOUT):
        async with transport, anyio.create_task_group() as tg:
            assert await call(transport, "echo", {}) == {}
            tg.start_soon(reader)
            await waiting.wait()
            await transport.aclose()
    assert len(errors) == 1
    assert transport.returncode == 0


async def test_aclose_under_cancellation_still_stops_the_server() -> None:
    transport = StdioTransport(server_params(), shutdown_timeout=0.5)
    with anyio.fail_after(TIMEOUT):
        await transport.__aenter__()
        await call(transport, "linger", {})
        with anyio.CancelScope() as scope:
            scope.cancel()
            await transport.aclose()
        await transport.__aexit__(None, None, None)
    assert transport.returncode == -signal.SIGTERM


def test_limits_must_be_positive() -> None:
    with pytest.raises(ValueError):
        StdioTransport(server_params(), max_message_size=0)
    with pytest.raises(ValueError):
        StdioTransport(server_params(), shutdown_timeout=0)
