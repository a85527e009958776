"""Era negotiation (PROTOCOL.md): which protocol era and version a new session speaks.

In ``mode="auto"`` the client probes ``server/discover`` at the newest version and
falls back to the legacy ``initialize`` handshake on anything that is not positive
evidence of a modern server. A transport failure or timeout is never an era verdict,
with one exception: the first probe is bounded (``probe_timeout``), because servers on
``mcp`` 1.8 and older never answer it (they stay alive, stuck, or exit at the next
message). `connect` then tries ``initialize`` on the same connection (also bounded: a
stuck server must not hang it), and for a stdio server in a fresh process, which only
ever sees ``initialize`` and so gets the ordinary read timeout: a server that is merely
slow to start (``npx`` fetching it) still connects.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any, TypeAlias

from mrtr.errors import (
    EraProbeTimeoutError,
    MCPError,
    MRTRError,
    ProtocolError,
    RequestTimeoutError,
    TransportError,
)
from mrtr.types._constants import MODERN_PROTOCOL_VERSIONS, UNSUPPORTED_PROTOCOL_VERSION

if TYPE_CHECKING:
    from mrtr.session import ClientSession

__all__ = ["DEFAULT_PROBE_TIMEOUT", "connect", "negotiate"]

_logger = logging.getLogger("mrtr.client")

DEFAULT_PROBE_TIMEOUT = 10.0
"""Seconds ``mode="auto"`` waits for an answer to its first ``server/discover``."""

_MAX_DISCOVER_ATTEMPTS = 3
"""``server/discover`` probes before giving up on a server that keeps refusing versions."""


class _ProbeTimedOut(Exception):
    """The first ``server/discover`` got no answer within the probe timeout."""


OpenSession: TypeAlias = "Callable[[AsyncExitStack], Awaitable[ClientSession]]"
"""Opens a transport and a session on it, both closed with the given stack."""


async def connect(
    open_session: OpenSession,
    mode: str,
    *,
    probe_timeout: float,
    restartable: bool,
    read_timeout: float | None = None,
) -> tuple[AsyncExitStack, ClientSession]:
    """Open a session and settle its era; never hang on a server that ignores the probe.

    Args:
        open_session: opens a fresh transport and session (called again to restart).
        mode: ``"auto"``, ``"legacy"`` or a modern protocol version.
        probe_timeout: the bound on the first ``server/discover`` in ``"auto"`` mode.
        restartable: a fresh connection is a fresh server process (stdio).
        read_timeout: the bound on ``initialize`` in a fresh process (``None``: none).

    Returns:
        The stack that closes the session and transport, and the session.

    Raises:
        EraProbeTimeoutError: no handshake answered in time (it names ``mode="legacy"``);
            never raised for a fresh process without a `read_timeout`.
        MCPError, ProtocolError, RequestTimeoutError, TransportError: as `negotiate`.
    """
    stack = AsyncExitStack()
    try:
        session = await open_session(stack)
        try:
            await negotiate(session, mode, probe_timeout=probe_timeout)
            return stack, session
        except _ProbeTimedOut as timed_out:
            cause = timed_out.__cause__
        _logger.info("no answer to server/discover in %g s; trying initialize", probe_timeout)
        try:
            await session.initialize(timeout=probe_timeout)
            return stack, session
        except (RequestTimeoutError, TransportError) as exc:
            failure: MRTRError = exc
        if not restartable:
            if isinstance(failure, RequestTimeoutError):
                raise EraProbeTimeoutError(probe_timeout) from cause
            raise failure
        # An old stdio server stuck on the probe, or killed by it: start it afresh.
        _logger.info("initialize failed there too (%s); restarting the server", failure)
        await stack.aclose()
        stack = AsyncExitStack()
        session = await open_session(stack)
        try:
            await session.initialize(timeout=read_timeout)
        except RequestTimeoutError as exc:
            raise EraProbeTimeoutError(exc.timeout) from exc
        return stack, session
    except BaseException:
        try:
            await stack.aclose()
        except Exception as close_error:  # the failure to connect is the news
            _logger.debug("closing after a failed connect also failed: %r", close_error)
        raise


async def negotiate(
    session: ClientSession, mode: str, *, probe_timeout: float | None = None
) -> None:
    """Settle the era of `session` as `mode` asks.

    Args:
        session: an open session with no era yet.
        mode: ``"auto"``, ``"legacy"`` or a modern protocol version.
        probe_timeout: in ``"auto"`` mode, the bound on the first ``server/discover``;
            past it `connect` takes over (``_ProbeTimedOut``).

    Raises:
        ProtocolError: a modern `mode` the server does not support.
        MCPError: the server refused the handshake (or kept refusing versions it says it
            supports).
        RequestTimeoutError, TransportError: no answer.
    """
    if mode == "legacy":
        await session.initialize()
        return
    versions = MODERN_PROTOCOL_VERSIONS if mode == "auto" else (mode,)
    if await _discover(session, versions, probe_timeout if mode == "auto" else None):
        return
    if mode != "auto":
        raise ProtocolError(
            f"the server does not support protocol {mode}", method="server/discover"
        )
    await session.initialize()


async def _discover(
    session: ClientSession, versions: tuple[str, ...], probe_timeout: float | None
) -> bool:
    """Probe ``server/discover``; True once the session is modern.

    A -32022 (`UnsupportedProtocolVersion`) is evidence of a modern server: retry at the
    newest version in its ``data.supported`` that we speak, even one just tried (a
    server may refuse a first request and accept the retry). Other errors and unusable
    answers are no evidence (False: fall back); transport failures and timeouts
    propagate, because a network failure is never an era verdict.

    Raises:
        MCPError: the server kept answering -32022 for versions it says it supports.
    """
    version = versions[0]
    for attempt in range(_MAX_DISCOVER_ATTEMPTS):
        try:
            result = await _probe(session, version, probe_timeout if attempt == 0 else None)
        except MCPError as exc:
            if exc.code != UNSUPPORTED_PROTOCOL_VERSION:
                return False
            supported = _supported_versions(exc.data)
            mutual = [v for v in versions if v in supported]
            if not mutual:
                return False
            if attempt == _MAX_DISCOVER_ATTEMPTS - 1:
                raise
            version = mutual[0]
            continue
        except ProtocolError:
            return False  # an answer that does not parse is no evidence of a modern server
        if session.era == "modern":
            return True
        mutual = [v for v in versions if v in result.supported_versions and v != version]
        if not mutual:
            return False
        version = mutual[0]
    return False


async def _probe(session: ClientSession, version: str, bound: float | None) -> Any:
    """One ``server/discover``; a bounded one that times out raises ``_ProbeTimedOut``."""
    if bound is None:
        return await session.discover(version)
    try:
        return await session.discover(version, timeout=bound)
    except RequestTimeoutError as exc:
        raise _ProbeTimedOut from exc


def _supported_versions(data: Any) -> list[str]:
    supported = data.get("supported") if isinstance(data, dict) else None
    if not isinstance(supported, list):
        return []
    return [version for version in supported if isinstance(version, str)]
