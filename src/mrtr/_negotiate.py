"""Era negotiation (PROTOCOL.md): which protocol era and version a new session speaks.

In ``mode="auto"`` the client probes ``server/discover`` at the newest version and
falls back to the legacy ``initialize`` handshake on anything that is not positive
evidence of a modern server. A transport failure or timeout is never an era verdict.
"""

from __future__ import annotations

from typing import Any

from mrtr.errors import MCPError, ProtocolError
from mrtr.session import ClientSession
from mrtr.types._constants import MODERN_PROTOCOL_VERSIONS, UNSUPPORTED_PROTOCOL_VERSION

__all__ = ["negotiate"]

_MAX_DISCOVER_ATTEMPTS = 3
"""``server/discover`` probes before giving up on a server that keeps refusing versions."""


async def negotiate(session: ClientSession, mode: str) -> None:
    """Settle the era of `session` as `mode` asks.

    Args:
        session: an open session with no era yet.
        mode: ``"auto"``, ``"legacy"`` or a modern protocol version.

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
    if await _discover(session, versions):
        return
    if mode != "auto":
        raise ProtocolError(
            f"the server does not support protocol {mode}", method="server/discover"
        )
    await session.initialize()


async def _discover(session: ClientSession, versions: tuple[str, ...]) -> bool:
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
            result = await session.discover(version)
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


def _supported_versions(data: Any) -> list[str]:
    supported = data.get("supported") if isinstance(data, dict) else None
    if not isinstance(supported, list):
        return []
    return [version for version in supported if isinstance(version, str)]
