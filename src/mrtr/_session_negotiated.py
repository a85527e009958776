"""What a `ClientSession` settled with its server: era, versions, capabilities, identities.

`Negotiated` is mixed into `ClientSession`: read-only views of its `EraState`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mrtr._envelope import Era, EraState
    from mrtr.transports import JSONObject
    from mrtr.types import DiscoverResult, Implementation, InitializeResult, ServerCapabilities

__all__ = ["Negotiated"]


class Negotiated:
    """The negotiated era, versions and capabilities of `ClientSession`."""

    _era: EraState

    @property
    def era(self) -> Era | None:
        """``"legacy"`` or ``"modern"`` once settled, else ``None``."""
        return self._era.era

    @property
    def protocol_version(self) -> str | None:
        """The negotiated protocol version, or ``None`` before negotiation."""
        return self._era.protocol_version

    @property
    def client_capabilities(self) -> JSONObject:
        """The capabilities this session advertises (derived from its callbacks)."""
        return self._era.capabilities

    @property
    def client_info(self) -> Implementation:
        """Who this client says it is."""
        return self._era.client_info

    @property
    def initialize_result(self) -> InitializeResult | None:
        """The server's answer to ``initialize`` (legacy), if any."""
        return self._era.initialize_result

    @property
    def discover_result(self) -> DiscoverResult | None:
        """The server's answer to ``server/discover`` (modern), if any."""
        return self._era.discover_result

    @property
    def server_info(self) -> Implementation | None:
        """The server's self-description, when the server gave one."""
        return self._era.server_info()

    @property
    def server_capabilities(self) -> ServerCapabilities | None:
        """The server's capabilities, once negotiated."""
        return self._era.server_capabilities()
