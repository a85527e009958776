"""The stdio transport: run the server as a subprocess and speak newline-delimited JSON.

Each message is one line of compact UTF-8 JSON on the server's stdin (ours to write) and
stdout (ours to read); the server's stderr is free text passed on line by line to the
client's stderr or to a sink. Reading is bounded: a line longer than `max_message_size`
is skipped without buffering it (only its first and last bytes are kept), and fails the
request it answers (`transports._oversize`); the connection lives on.

Stdout is read by `receive` itself (which also gives the server back-pressure, and
costs no task per message). Stderr is pumped, and the server's exit watched, by two
tasks in the transport's lifespan task group, from entry to exit. On POSIX the pipes
are this transport's own (see `_backends.asyncio._pipes`: fewer trips through the
event loop per message).
"""

from __future__ import annotations

import enum
import logging
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import anyio.abc
import anyio.lowlevel
import anyio.to_thread

from mrtr._anyio import fresh_copy
from mrtr._lazy import publish
from mrtr._wire.depth import PEER_MAX_JSON_DEPTH
from mrtr._wire.framing import (
    decode_message,
    encode_echoing,
    response_id_of_unparseable,
)
from mrtr.errors import ProcessExitedError, ProtocolError, TransportError
from mrtr.transports._backends.asyncio._pipes import (
    AsyncioPipeReader,
    FdWriter,
    OneAtATime,
    PipeWriter,
    StreamWriter,
    asyncio_stdout_pipe,
    close_fds,
)
from mrtr.transports._base import (
    DEFAULT_MAX_MESSAGE_SIZE,
    JSONObject,
    RequestFailed,
    ResponseSink,
    Transport,
)
from mrtr.transports._oversize import BoundedLines, OversizedLine
from mrtr.transports._process_group import PROCESS_GROUPS, SIGKILL, signal_group
from mrtr.transports._response_shortcut import ResponseShortcut
from mrtr.transports._stdio_params import StdioServerParameters, default_environment
from mrtr.transports._stdio_stderr import DEFAULT_MAX_STDERR_BACKLOG, StderrLines, StderrSink

__all__ = [
    "DEFAULT_MAX_STDERR_BACKLOG",
    "DEFAULT_SHUTDOWN_TIMEOUT",
    "StderrSink",
    "StdioServerParameters",
    "StdioTransport",
    "default_environment",
]

_logger = logging.getLogger("mrtr.transports.stdio")

DEFAULT_SHUTDOWN_TIMEOUT = 2.0
"""Seconds to wait at each shutdown step (stdin closed, then terminate, then kill)."""

_CHUNK = 65536
# `anyio.wait_writable` takes pipes on POSIX only (sockets on Windows).
_OWN_PIPES = sys.platform != "win32"


class _State(enum.Enum):
    UNOPENED = "unopened"
    OPEN = "open"
    CLOSED = "closed"


class StdioTransport(Transport):
    """Runs an MCP server as a subprocess and exchanges newline-delimited JSON with it.

    Use it as ``async with StdioTransport(params) as transport:``; the process starts on
    entry and is shut down on exit (stdin closed, then terminate, then kill: `aclose`
    never hangs). One task at a time should call `receive`; `send` may be called from
    any task.
    """

    def __init__(
        self,
        params: StdioServerParameters,
        *,
        stderr: StderrSink | None = None,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        shutdown_timeout: float = DEFAULT_SHUTDOWN_TIMEOUT,
        max_stderr_backlog: int = DEFAULT_MAX_STDERR_BACKLOG,
        max_json_depth: int = PEER_MAX_JSON_DEPTH,
    ) -> None:
        """Prepare the transport; nothing starts before ``async with``.

        Args:
            params: what to run.
            stderr: where the server's stderr lines go: a callable taking each line
                (without its line ending) or a text file; ``None`` is the client's
                ``sys.stderr`` (looked up at each write, so redirections apply). A
                file is written from a thread of the transport's own, so a sink that
                blocks (a full pipe) never blocks the client; a callable is called on
                the event loop and must not block.
            max_message_size: the cap in bytes on one line from the server.
            shutdown_timeout: seconds to wait at each shutdown step.
            max_stderr_backlog: the most characters of server stderr waiting for a
                slow file sink; lines past it are dropped (and counted in the sink).
            max_json_depth: objects and arrays one line may nest; a deeper line is
                dropped (and logged) as unreadable, on every Python.

        Raises:
            ValueError: a limit is not positive.
        """
        if max_message_size < 1 or shutdown_timeout <= 0 or max_stderr_backlog < 1:
            raise ValueError(
                "max_message_size, shutdown_timeout and max_stderr_backlog must be positive"
            )
        self.params = params
        self._stderr = StderrLines(stderr, max_backlog=max_stderr_backlog)
        self._max_message_size = max_message_size
        self._max_json_depth = max_json_depth
        self._shutdown_timeout = shutdown_timeout
        self._state = _State.UNOPENED
        self._process: anyio.abc.Process | None = None
        self._stdin: PipeWriter | None = None
        self._fd_stdin: FdWriter | None = None  # the same writer, when it can write at once
        self._stdout: anyio.abc.ByteReceiveStream | None = None
        self._own_stdout: AsyncioPipeReader | None = None
        self._failure: TransportError | None = None
        self._lines = BoundedLines(max_message_size)
        self._stdout_eof = False
        self._stderr_done: anyio.Event | None = None
        self._stdout_ended: anyio.Event | None = None
        self._server_gone = False  # exited, yet its stdout stayed open past the grace
        self._send_lock = OneAtATime()
        self._receive_lock = OneAtATime()
        self._shortcut = ResponseShortcut(self._lines, max_message_size, max_json_depth)

    @property
    def max_message_size(self) -> int:
        """The cap in bytes on one incoming line."""
        return self._max_message_size

    @property
    def pid(self) -> int | None:
        """The server's process id, once started."""
        return self._process.pid if self._process is not None else None

    @property
    def returncode(self) -> int | None:
        """The server's exit code once it has exited (negative: killed by that signal)."""
        return self._process.returncode if self._process is not None else None

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        """Start the server; pump stderr and watch the exit in the lifespan's task group.

        Raises:
            TransportError: the command could not be started (not found, not
                executable, bad working directory), or the transport was opened before.
        """
        if self._state is not _State.UNOPENED:
            raise TransportError("a StdioTransport can be opened only once")
        try:
            process = await self._start_process()
        except OSError as exc:
            self._state = _State.CLOSED
            raise TransportError(
                f"could not start the MCP server {self.params.command!r}: {exc}"
            ) from exc
        self._process = process
        self._stderr_done = anyio.Event()
        self._stdout_ended = anyio.Event()
        async with anyio.create_task_group() as task_group:
            assert process.stderr is not None
            task_group.start_soon(self._stderr.pump, process.stderr, self._stderr_done)
            task_group.start_soon(self._watch_exit)
            self._state = _State.OPEN
            try:
                yield
            finally:
                await self.aclose()
                # Normally over already (stderr ended with the process); a grandchild
                # holding the pipe open must not keep the lifespan waiting.
                task_group.cancel_scope.cancel()

    async def _start_process(self) -> anyio.abc.Process:
        """Start the server; on POSIX with its stdin (and on asyncio stdout) on our pipes.

        Raises:
            OSError: the command could not be started.
        """
        command = [self.params.command, *self.params.args]
        stdin_read, stdin_write = os.pipe() if _OWN_PIPES else (-1, -1)
        reader, stdout_write = await asyncio_stdout_pipe() if _OWN_PIPES else (None, -1)
        try:
            process = await anyio.open_process(
                command,
                stdin=stdin_read if _OWN_PIPES else subprocess.PIPE,
                stdout=stdout_write if reader is not None else subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=self.params.environment(),
                cwd=self.params.cwd,
                # its own process group, so that closing stops the children it started
                # too (a server behind `sh -c`, a worker pool)
                start_new_session=PROCESS_GROUPS,
            )
        except BaseException:
            close_fds(stdin_write)
            if reader is not None:
                await reader.aclose()
            raise
        finally:
            close_fds(stdin_read, stdout_write)  # the child holds its own copies now
        if _OWN_PIPES:
            self._stdin = self._fd_stdin = FdWriter(stdin_write)
        else:
            assert process.stdin is not None
            self._stdin = StreamWriter(process.stdin)
        if reader is not None:
            self._stdout = self._own_stdout = reader
            reader.offer_chunks_to(self._shortcut.take)
        else:
            assert process.stdout is not None
            self._stdout = process.stdout
        return process

    async def send(self, message: JSONObject) -> None:
        """Write one message as a line on the server's stdin.

        Raises:
            TransportError: the transport is not open, or the server stopped reading
                (`ProcessExitedError` when it is known to have exited).
            TypeError: the message is not a dict or is not JSON-serializable.
            ValueError: the message holds NaN or an infinity.
        """
        data = encode_echoing(message) + b"\n"
        process = self._require_open()
        assert self._stdin is not None
        await anyio.lowlevel.checkpoint_if_cancelled()
        lock = self._send_lock
        try:
            # The usual case: nobody is waiting for room, and the pipe takes the line at
            # once; no await, so no other send can come between.
            fd_stdin = self._fd_stdin
            if fd_stdin is not None and not lock.locked():
                if fd_stdin.write_nowait(data):
                    return
                data = b""  # the rest is queued: flushed by the write below
            try:
                lock.acquire_nowait()
            except anyio.WouldBlock:
                await lock.acquire()
            try:
                await self._stdin.write(data)
            finally:
                lock.release()
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            if process.returncode is not None:
                raise ProcessExitedError(self.params.command, process.returncode) from exc
            raise TransportError(
                f"could not write to the MCP server {self.params.command!r}: {exc!r}"
            ) from exc

    async def receive(self) -> JSONObject | RequestFailed:
        """Return the next message the server wrote on stdout.

        Lines that are not a JSON object are logged (logger ``mrtr.transports.stdio``)
        and skipped; a response unreadable only for an integer over 4,300 digits comes
        back as `RequestFailed` for its request. When the server exits, the complete
        lines it wrote first are still returned, then the exit is reported.

        Raises:
            ProcessExitedError: the server exited or closed its stdout (``returncode``
                says how).
            TransportError: the transport is not open.
        """
        if self._must_check_cancel():
            await anyio.lowlevel.checkpoint_if_cancelled()
        lock = self._receive_lock
        try:
            lock.acquire_nowait()
        except anyio.WouldBlock:
            await lock.acquire()
        try:
            while True:
                self._require_open()
                if (ready := self._shortcut.pop_ready()) is not None:
                    return ready
                try:
                    line = await self._next_line()
                except OversizedLine as big:
                    failed = big.skipped.failure(self._max_message_size, logger=_logger)
                    if failed is not None:
                        return failed
                    continue
                if not line or line.isspace():
                    continue  # a blank line carries nothing; not worth a warning
                message = decode_message(line, logger=_logger, max_depth=self._max_json_depth)
                if message is not None:
                    return message
                failed_id = response_id_of_unparseable(line, max_depth=self._max_json_depth)
                if failed_id is not None:  # that request fails; the connection lives on
                    error = ProtocolError(
                        f"the response to request {failed_id!r} holds an integer too long "
                        "to parse (over 4,300 digits)"
                    )
                    return RequestFailed(failed_id, error)
        finally:
            self._receive_lock.release()

    def set_response_sink(self, sink: ResponseSink | None) -> None:
        """Offer `sink` the responses read while `receive` waits (asyncio's pipe only).

        A `SupportsResponseSink`: on trio, or without the own pipes, nothing is offered.
        """
        self._shortcut.sink = sink

    async def aclose(self) -> None:
        """Stop the server: close its stdin, wait, terminate, wait, kill.

        Each wait lasts at most `shutdown_timeout`; the server's last stderr lines are
        passed on meanwhile. Runs shielded from cancellation so the process is never
        left behind. Safe to call more than once.
        """
        if self._state is _State.CLOSED:
            return
        self._state = _State.CLOSED
        self._shortcut.open = False
        process = self._process
        if process is None:
            return
        with anyio.CancelScope(shield=True):
            await self._shutdown(process)

    # -- reading -------------------------------------------------------------------

    def _require_open(self) -> anyio.abc.Process:
        if self._state is _State.UNOPENED:
            raise TransportError("the StdioTransport is not open: use `async with`")
        if self._state is _State.CLOSED:
            raise TransportError(f"the connection to {self.params.command!r} is closed")
        if self._failure is not None:
            raise fresh_copy(self._failure)  # one failure, many callers: one object each
        assert self._process is not None
        return self._process

    def _must_check_cancel(self) -> bool:
        """Whether `receive` could return without waiting (then it checks for cancellation).

        The usual receive waits for the pipe at once, and a cancelled caller stops there.
        """
        reader = self._own_stdout
        return (
            reader is None
            or self._shortcut.ready is not None
            or reader.has_data()
            or self._lines.buffered() > 0
            or self._stdout_eof
            or self._server_gone
        )

    async def _next_line(self) -> bytes:
        # `receive` has just checked for cancellation, or knows this read waits (where a
        # cancelled caller stops): the first read need not check again
        checked = True
        while True:
            line = self._lines.next_line()
            if line is not None:
                return line
            if self._shortcut.ready is not None:
                return b""  # `receive` returns it next
            if self._stdout_eof or not await self._read_stdout(checked):
                return await self._at_eof()
            checked = False

    async def _read_stdout(self, checked: bool = False) -> bool:
        """Append one chunk of stdout to the buffer (stderr is pumped by its own task).

        `checked`: the caller has just checked for cancellation.
        Returns False at end of file (or when `aclose` closed the stream).
        """
        assert self._stdout is not None
        try:
            if self._server_gone:
                chunk = await self._read_after_exit(self._stdout)
            elif checked and self._own_stdout is not None:
                chunk = await self._own_stdout.receive_checked(_CHUNK)
            else:
                chunk = await self._stdout.receive(_CHUNK)
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
            self._stdout_eof = True
            if self._stdout_ended is not None:
                self._stdout_ended.set()
            return False
        self._lines.feed(chunk)
        return True

    async def _read_after_exit(self, stdout: anyio.abc.ByteReceiveStream) -> bytes:
        """Read what the exited server left in the pipe; stop when nothing more comes.

        Raises:
            anyio.EndOfStream: nothing came within `shutdown_timeout` (only a child of
                the server can still write: the connection is over).
        """
        with anyio.move_on_after(self._shutdown_timeout):
            return await stdout.receive(_CHUNK)
        raise anyio.EndOfStream

    async def _at_eof(self) -> bytes:
        """Return a last unterminated line, or report why the stream ended."""
        if self._state is _State.CLOSED:
            raise TransportError(f"the connection to {self.params.command!r} is closed")
        line = self._lines.rest()
        if line:
            return line
        returncode = await self._wait_for_exit()
        self._failure = ProcessExitedError(self.params.command, returncode)
        raise self._failure

    async def _wait_for_exit(self) -> int | None:
        """Wait (bounded) for the process to exit and the stderr pump to pass on the rest."""
        assert self._process is not None and self._stderr_done is not None
        process = self._process
        with anyio.move_on_after(self._shutdown_timeout):
            await process.wait()
            await self._stderr_done.wait()
        return process.returncode

    async def _watch_exit(self) -> None:
        """End the connection when the server exits, even if its stdout stays open.

        A child the server forked may hold the stdout pipe open after the server is
        gone, and `receive` would then wait for end of file forever. Once the server has
        exited and `shutdown_timeout` passed without end of file, a `receive` blocked
        reading is woken (stdout is closed on our side) and reports the exit; a later
        `receive` still gets the complete lines left in the pipe, then the exit.
        """
        assert self._process is not None and self._stdout_ended is not None
        try:
            await self._process.wait()
            with anyio.move_on_after(self._shutdown_timeout):
                await self._stdout_ended.wait()
            if self._stdout_eof or self._stdout is None:
                return
            self._server_gone = True
            self._shortcut.open = False
            _logger.info(
                "the MCP server %r exited but its stdout is still open (a child of it "
                "holds it); ending the connection",
                self.params.command,
            )
            if self._receive_lock.locked():  # a receive is waiting on the pipe: wake it
                await self._stdout.aclose()
        except Exception:  # a failure here must not end the connection: say so, stop
            _logger.exception("watching the server process failed")

    # -- shutdown ------------------------------------------------------------------

    async def _shutdown(self, process: anyio.abc.Process) -> None:
        if self._stdin is not None:
            # Not under the send lock: a send blocked on a server that stopped reading
            # would hold it forever; closing the pipe fails that send instead.
            await self._stdin.aclose()
        if process.returncode is None:
            await self._wait_draining(process)
        if process.returncode is None:
            signal_group(process, signal.SIGTERM, process.terminate)
            await self._wait_for_exit()
        if process.returncode is None:
            signal_group(process, SIGKILL, process.kill)
            await self._wait_for_exit()
        # whatever the server started and left behind goes with it
        signal_group(process, SIGKILL, None)
        with anyio.move_on_after(self._shutdown_timeout):
            await process.aclose()
        if self._own_stdout is not None:
            await self._own_stdout.aclose()  # process.aclose closes only anyio's streams
        await self._stderr.close(self._shutdown_timeout)

    async def _wait_draining(self, process: anyio.abc.Process) -> None:
        """Wait for the server to exit on its own, discarding stdout it still writes."""
        with anyio.move_on_after(self._shutdown_timeout):
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._discard_stdout)
                await self._wait_for_exit()
                tg.cancel_scope.cancel()

    async def _discard_stdout(self) -> None:
        # A receive in progress owns stdout and keeps reading it; otherwise read and drop
        # what the server still writes, so it is not blocked on a full pipe while exiting.
        if self._receive_lock.locked() or self._stdout_eof or self._stdout is None:
            return
        async with self._receive_lock:
            while True:
                try:
                    await self._stdout.receive(_CHUNK)
                except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
                    return


publish("mrtr.transports", StdioTransport)
