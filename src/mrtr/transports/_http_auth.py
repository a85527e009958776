"""The seam between an ``httpx.Auth`` and the HTTP transport: `SupportsTransportAuth`.

An auth that implements it (``mrtr.auth.OAuth`` does) is told the endpoint and the
httpx client for its own requests (`bind`), and lets the transport authorize a request
on its own HTTP/1.1 client without running the httpx flow: `headers_for` gives the
headers when no token work can be needed, `accepts` says whether the response stands or
the request goes again through ``async_auth_flow``. Any other ``httpx.Auth`` runs on
httpx. The protocol is public and checked with ``isinstance``, not found by name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

import httpx

from mrtr._lazy import publish

__all__ = ["AuthHTTPClient", "SupportsTransportAuth", "transport_auth"]

AuthHTTPClient = httpx.AsyncClient | Callable[[], "httpx.AsyncClient | None"]
"""The httpx client for an auth's own requests, or a maker of it (``None`` once closed)."""


@runtime_checkable
class SupportsTransportAuth(Protocol):
    """An ``httpx.Auth`` the HTTP transport can bind and drive without httpx."""

    def bind(self, url: str, client: AuthHTTPClient) -> None:
        """Learn the MCP endpoint and the httpx client for the auth's own requests.

        Raises:
            ValueError: the auth was made for another endpoint.
        """

    def headers_for(self, method: str, url: str) -> dict[str, str] | None:
        """The auth headers of one request, or ``None`` to run the httpx auth flow."""

    def accepts(self, url: str, status: int, headers: httpx.Headers) -> bool:
        """Whether a response to a `headers_for` request stands (else: the flow again)."""


def transport_auth(auth: httpx.Auth | None) -> SupportsTransportAuth | None:
    """`auth` as a `SupportsTransportAuth`, if it is one."""
    return auth if isinstance(auth, SupportsTransportAuth) else None


publish("mrtr.transports.http", SupportsTransportAuth)
