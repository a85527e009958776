"""`EraState`: a session's protocol era, its negotiation requests, and the envelope.

A modern request carries the era in ``params._meta`` (protocol version, client
capabilities and info, log level); a legacy one carries nothing after the ``initialize``
handshake. `EraState.params` is the connection's envelope hook: it adds that ``_meta``
(and a progress token) to each request's params without changing the caller's dict.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mrtr._wire.jsonrpc import Era, with_progress_token
from mrtr.errors import ProtocolError
from mrtr.session._connection import JSONRPCConnection
from mrtr.types._constants import (
    LEGACY_PROTOCOL_VERSIONS,
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    META_SERVER_INFO,
    MODERN_PROTOCOL_VERSIONS,
)

if TYPE_CHECKING:
    from mrtr.transports import JSONObject, RequestId
    from mrtr.types import DiscoverResult, Implementation, InitializeResult, ServerCapabilities

__all__ = ["Era", "EraState"]

_logger = logging.getLogger("mrtr.session")


class EraState:
    """The era, version and negotiation results of one session, and its request envelope.

    Args:
        client_info: who the client says it is.
        capabilities: the client capabilities it advertises.
        log_level: the log level asked of modern servers, if any.
    """

    def __init__(
        self, client_info: Implementation, capabilities: JSONObject, log_level: str | None
    ) -> None:
        self.client_info = client_info
        self.capabilities = capabilities
        self.log_level = log_level
        self.era: Era | None = None
        self.protocol_version: str | None = None
        self.initialize_result: InitializeResult | None = None
        self.discover_result: DiscoverResult | None = None
        self._envelope: JSONObject | None = None
        self._bare_params: JSONObject | None = None

    # -- the envelope ----------------------------------------------------------------

    def modern_envelope(self, version: str) -> JSONObject:
        """The ``_meta`` every modern request at `version` carries."""
        envelope: JSONObject = {
            META_PROTOCOL_VERSION: version,
            META_CLIENT_CAPABILITIES: self.capabilities,
            META_CLIENT_INFO: self.client_info.to_wire(),
        }
        if self.log_level is not None:
            envelope[META_LOG_LEVEL] = self.log_level
        return envelope

    @property
    def envelope(self) -> JSONObject | None:
        """The ``_meta`` added to every request now (``None``: legacy or unsettled)."""
        return self._envelope

    def set_envelope(self, envelope: JSONObject | None) -> None:
        """Add `envelope` to every request from now on (``None``: add nothing)."""
        self._envelope = envelope
        self._bare_params = None if envelope is None else {"_meta": envelope}

    def params(
        self, params: Mapping[str, Any] | None, progress_token: RequestId | None
    ) -> Mapping[str, Any] | None:
        """The params to send: `params` with the envelope and the progress token."""
        envelope = self._envelope
        if envelope is None:
            return with_progress_token(params, progress_token)
        if params is None and progress_token is None:
            return self._bare_params
        user_meta = params.get("_meta") if params else None
        if user_meta is None and progress_token is None:
            meta: Mapping[str, Any] = envelope
        else:
            meta = {**(user_meta or {}), **envelope}
            if progress_token is not None:
                meta["progressToken"] = progress_token
            if user_meta is not None and META_CLIENT_CAPABILITIES in user_meta:
                # a request that declares its own capabilities (an extension opted in or
                # out for this request only) keeps them: they are per request on the wire
                meta[META_CLIENT_CAPABILITIES] = user_meta[META_CLIENT_CAPABILITIES]
        return {**(params or {}), "_meta": meta}

    # -- settling the era ------------------------------------------------------------

    def adopt_modern(self, version: str, discover_result: DiscoverResult | None) -> None:
        """Speak the modern era at `version` from now on.

        Raises:
            ValueError: `version` is not a modern version this library speaks.
        """
        if version not in MODERN_PROTOCOL_VERSIONS:
            raise ValueError(f"{version!r} is not a modern protocol version")
        self.set_envelope(self.modern_envelope(version))
        self.era = "modern"
        self.protocol_version = version
        self.discover_result = discover_result

    def initialize_params(self) -> JSONObject:
        """The params of the legacy ``initialize`` request."""
        return {
            "protocolVersion": LEGACY_PROTOCOL_VERSIONS[0],
            "capabilities": self.capabilities,
            "clientInfo": self.client_info.to_wire(),
        }

    def adopt_legacy(self, result: InitializeResult) -> None:
        """Speak the legacy era the server chose in its ``initialize`` answer."""
        self.set_envelope(None)
        self.initialize_result = result
        self.era = "legacy"
        self.protocol_version = result.protocol_version

    async def discover(
        self, connection: JSONRPCConnection, version: str, timeout: float | None
    ) -> DiscoverResult:
        """Send ``server/discover`` at `version`; adopt it if the server lists it.

        Raises:
            MCPError, ProtocolError, RequestTimeoutError, TransportError: as the session.
        """
        from mrtr.types import parse_result

        previous = self._envelope
        self.set_envelope(self.modern_envelope(version))
        try:
            raw = await connection.send_request("server/discover", None, timeout=timeout)
            result = parse_result("server/discover", raw)
        except BaseException:
            self.set_envelope(previous)
            raise
        if version in result.supported_versions:
            self.adopt_modern(version, result)
        else:
            self.set_envelope(previous)
        return result

    async def initialize(
        self, connection: JSONRPCConnection, timeout: float | None
    ) -> InitializeResult:
        """Run the legacy handshake and adopt the version the server chose.

        Raises:
            ProtocolError: the server chose a protocol version this client does not speak.
            MCPError, RequestTimeoutError, TransportError: as the session.
        """
        from mrtr.types import parse_result

        self.set_envelope(None)
        raw = await connection.send_request("initialize", self.initialize_params(), timeout=timeout)
        result = parse_result("initialize", raw)
        if result.protocol_version not in LEGACY_PROTOCOL_VERSIONS:
            raise ProtocolError(
                f"the server chose protocol version {result.protocol_version!r}, which this "
                f"client does not speak (it speaks {', '.join(LEGACY_PROTOCOL_VERSIONS)})",
                method="initialize",
            )
        self.adopt_legacy(result)
        await connection.send_notification("notifications/initialized")
        return result

    # -- what the server said --------------------------------------------------------

    def server_info(self) -> Implementation | None:
        """The server's self-description, when the server gave one."""
        from pydantic import ValidationError

        from mrtr.types import Implementation

        if self.initialize_result is not None:
            return self.initialize_result.server_info
        meta = self.discover_result.meta if self.discover_result is not None else None
        info = meta.get(META_SERVER_INFO) if meta else None
        if info is None:
            return None
        try:
            return Implementation.model_validate(info)
        except ValidationError:
            _logger.warning("ignoring a malformed server info in server/discover: %r", info)
            return None

    def server_capabilities(self) -> ServerCapabilities | None:
        """The server's capabilities, once negotiated."""
        if self.initialize_result is not None:
            return self.initialize_result.capabilities
        if self.discover_result is not None:
            return self.discover_result.capabilities
        return None
