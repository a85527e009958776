"""From a resolved `Target` and the command's flags to an open `mrtr.Client`.

The transport is built here (not by the client) so ``--trace`` can wrap it and the stdio
server's stderr can be kept out of the way: its last lines are shown only when the server
fails, or all of them with ``--server-stderr``.
"""

from __future__ import annotations

import argparse
import collections
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio

from mrtr.cli._args import CONNECT_TIMEOUT
from mrtr.cli._exit import ConnectTimeoutError
from mrtr.cli._targets import Target

if TYPE_CHECKING:
    from mrtr.cli._answering import Answerer
    from mrtr.cli._render import Output
    from mrtr.client import Client
    from mrtr.transports import Transport

__all__ = ["ServerStderr", "connect"]

STDERR_TAIL = 20
"""How many of the stdio server's last stderr lines are kept to explain a failure."""
NOTICE_AFTER = 2.0
"""Seconds of a silent handshake after which the person is told what is being waited for."""


class ServerStderr:
    """Where a stdio server's stderr goes: passed through, or kept as a short tail."""

    def __init__(self, *, passthrough: bool) -> None:
        self.passthrough = passthrough
        self.tail: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL)

    def __call__(self, line: str) -> None:
        """Take one line."""
        if self.passthrough:
            from mrtr.cli._safe import say

            say(f"[server] {line}", file=sys.stderr)
        else:
            self.tail.append(line)


def build_transport(target: Target, opts: argparse.Namespace, sink: ServerStderr) -> Transport:
    """The transport for a target, wrapped for ``--trace`` when asked."""
    transport: Transport
    if target.transport == "http":
        from mrtr.transports.http import StreamableHTTPTransport

        assert target.url is not None
        from mrtr.cli._auth import oauth_for

        transport = StreamableHTTPTransport(
            target.url, headers=dict(target.headers) or None, auth=oauth_for(target, opts)
        )
    else:
        from mrtr.transports import StdioServerParameters, StdioTransport

        assert target.command is not None
        params = StdioServerParameters(
            target.command, list(target.args), env=dict(target.env) or None, cwd=target.cwd
        )
        transport = StdioTransport(params, stderr=sink)
    if getattr(opts, "trace", False) or getattr(opts, "trace_file", None):
        from mrtr.cli._trace import TracingTransport

        url = target.url

        def scrub(text: str) -> str:
            from mrtr.cli._config import redact_url

            return text.replace(url, redact_url(url)) if url else text

        transport = TracingTransport(
            transport, jsonl=getattr(opts, "trace_file", None), scrub=scrub
        )
    return transport


def _logger(output: Output, *, show: bool) -> Any:
    """The logging callback: server log messages as jsonl events, and on stderr with -v."""

    async def log(params: Any) -> None:
        level = str(getattr(params, "level", "info"))
        data = getattr(params, "data", "")
        output.event({"event": "log", "level": level, "data": data})
        if show:
            from mrtr.cli._terminal import sanitize

            text = data if isinstance(data, str) else repr(data)
            output.note(f"[server {level}] {sanitize(text, multiline=False)}")

    return log


@asynccontextmanager
async def connect(
    target: Target,
    opts: argparse.Namespace,
    *,
    answerer: Answerer | None,
    output: Output,
    sink: ServerStderr,
    mode: str | None = None,
    on_transport: Callable[[Transport], None] | None = None,
    extra: dict[str, Any] | None = None,
) -> AsyncIterator[Client]:
    """Open a `Client` on the target with the command's callbacks, bounds and timeouts."""
    from mrtr.client import Client

    kwargs = {**_client_options(opts, answerer, output), **(extra or {})}
    mode = mode or getattr(opts, "mode", None) or "auto"
    transport = build_transport(target, opts, sink)
    if on_transport is not None:
        on_transport(transport)
    client = Client(
        transport,
        mode=mode,
        read_timeout_seconds=getattr(opts, "request_timeout", None),
        call_timeout=getattr(opts, "timeout", None),
        on_round=output.round,
        **kwargs,
    )
    limit = getattr(opts, "connect_timeout", None) or CONNECT_TIMEOUT
    handshake = "initialize" if mode == "legacy" else "server/discover"
    advice = "an older server may need --mode legacy" if mode != "legacy" else "slow to start?"
    connected = anyio.Event()
    timed_out = False

    async def watch(scope: anyio.CancelScope) -> None:
        nonlocal timed_out
        with anyio.move_on_after(NOTICE_AFTER):
            await connected.wait()
            return
        if output.terminal is not None or output.verbose:  # a person is watching
            output.note(f"mrtr: still waiting for {target.label} to answer {handshake}"
                        f" ({advice}; --connect-timeout {limit:g} s)")  # fmt: skip
        with anyio.move_on_after(max(limit - NOTICE_AFTER, 0)):
            await connected.wait()
            return
        timed_out = True
        scope.cancel()

    try:
        async with anyio.create_task_group() as group:
            with anyio.CancelScope() as scope:
                group.start_soon(watch, scope)
                async with client:
                    connected.set()
                    yield client
    except BaseException as exc:
        if timed_out:
            raise _too_slow(target, handshake, limit, advice) from None
        inner = _single(exc)
        if inner is not exc:
            raise inner from None
        raise
    if timed_out:
        raise _too_slow(target, handshake, limit, advice)


def _too_slow(target: Target, handshake: str, limit: float, advice: str) -> ConnectTimeoutError:
    return ConnectTimeoutError(
        f"{target.label} did not finish the {handshake} handshake within {limit:g} s"
        f" ({advice}, or raise --connect-timeout)"
    )


def _client_options(
    opts: argparse.Namespace, answerer: Answerer | None, output: Output
) -> dict[str, Any]:
    """The `Client` keywords the command's flags and answer sources ask for."""
    kwargs: dict[str, Any] = {}
    if answerer is not None:
        kwargs.update(
            elicitation_callback=answerer.elicit,
            elicitation_url_mode=True,
            sampling_callback=answerer.sample,
        )
        if answerer.roots:
            kwargs["list_roots_callback"] = answerer.list_roots
    if getattr(opts, "verbose", 0) or output.mode == "jsonl":
        kwargs["logging_callback"] = _logger(output, show=bool(getattr(opts, "verbose", 0)))
    if getattr(opts, "max_rounds", None) is not None:
        kwargs["input_required_max_rounds"] = opts.max_rounds
    if getattr(opts, "probe_timeout", None) is not None:
        kwargs["probe_timeout"] = opts.probe_timeout
    return kwargs


def _single(exc: BaseException) -> BaseException:
    """The one exception inside (nested) exception groups, else `exc` itself."""
    inner = getattr(exc, "exceptions", None)
    while isinstance(inner, tuple) and len(inner) == 1 and isinstance(inner[0], BaseException):
        exc = inner[0]
        inner = getattr(exc, "exceptions", None)
    return exc
