"""What the OAuth layer remembers: tokens, registrations, discovery results.

Plain dataclasses that turn into JSON-able dicts for a `TokenStore`. Every URL is kept as
the exact string received: issuers and resources compare as strings, never normalized.
Token and secret fields stay out of ``repr``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from mrtr._lazy import publish

__all__ = ["MAX_SECONDS", "ClientRegistration", "Discovery", "TokenSet", "bounded_seconds"]

MAX_SECONDS = 10**10
"""The largest count of seconds read from a server or a store (about 317 years)."""


def bounded_seconds(value: Any) -> float | None:
    """A number of seconds from JSON, or ``None`` when it is none or out of range.

    A server or a hand-edited store may hold any integer (``10**400`` overflows a
    float), a string, NaN or an infinity: only a finite number in
    ``[0, MAX_SECONDS]`` (or a short decimal string of one) counts.
    """
    if isinstance(value, str) and 0 < len(value) <= 20:
        try:
            value = float(value)
        except ValueError:
            return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, int) and not 0 <= value <= MAX_SECONDS:
        return None
    number = float(value)
    return number if math.isfinite(number) and 0 <= number <= MAX_SECONDS else None


def _str(data: dict[str, Any], name: str) -> str | None:
    value = data.get(name)
    return value if isinstance(value, str) else None


def _strs(data: dict[str, Any], name: str) -> tuple[str, ...]:
    value = data.get(name)
    if not isinstance(value, (list, tuple)):
        return ()
    return tuple(item for item in value if isinstance(item, str))


@dataclass(frozen=True)
class TokenSet:
    """An access token with what is needed to use and refresh it, even in a new process.

    Attributes:
        access_token: the token sent to the MCP server.
        token_type: ``Bearer`` (as the authorization server spelled it).
        expires_at: absolute expiry (seconds since the epoch), ``None`` when unknown.
        refresh_token: the refresh token, if one was issued.
        scope: the scopes granted (the ones requested when the server did not say).
        issuer: the authorization server that issued it.
        resource: the protected resource it is for.
        client_id: the client it was issued to.
        dpop_key: the PEM of the DPoP key a ``DPoP`` token is bound to.
    """

    access_token: str = field(repr=False)
    token_type: str = "Bearer"
    expires_at: float | None = None
    refresh_token: str | None = field(default=None, repr=False)
    scope: tuple[str, ...] = ()
    issuer: str = ""
    resource: str = ""
    client_id: str | None = None
    dpop_key: str | None = field(default=None, repr=False)

    def due(self, now: float, leeway: float) -> bool:
        """True when the token is expired or expires within ``leeway`` seconds."""
        return self.expires_at is not None and now >= self.expires_at - leeway

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict for a store."""
        data = asdict(self)
        data["scope"] = list(self.scope)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TokenSet | None:
        """Rebuild from `to_json` output; ``None`` for a record that does not fit."""
        access = _str(data, "access_token")
        if access is None:
            return None
        expires = data.get("expires_at")
        expires_at = None if isinstance(expires, str) else bounded_seconds(expires)
        return cls(
            access_token=access,
            token_type=_str(data, "token_type") or "Bearer",
            expires_at=expires_at,
            refresh_token=_str(data, "refresh_token"),
            scope=_strs(data, "scope"),
            issuer=_str(data, "issuer") or "",
            resource=_str(data, "resource") or "",
            client_id=_str(data, "client_id"),
            dpop_key=_str(data, "dpop_key"),
        )


@dataclass(frozen=True)
class ClientRegistration:
    """The client's identity at one authorization server.

    Attributes:
        issuer: the authorization server it is valid at.
        client_id: the client identifier.
        client_secret: the secret, for a confidential client.
        auth_method: how to authenticate at the token endpoint, when known.
        redirect_uris: the redirect URIs registered.
        source: ``"dcr"``, ``"cimd"`` or ``"static"``.
    """

    issuer: str
    client_id: str
    client_secret: str | None = field(default=None, repr=False)
    auth_method: str | None = None
    redirect_uris: tuple[str, ...] = ()
    source: str = "dcr"

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict for a store."""
        data = asdict(self)
        data["redirect_uris"] = list(self.redirect_uris)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ClientRegistration | None:
        """Rebuild from `to_json` output; ``None`` for a record that does not fit."""
        issuer, client_id = _str(data, "issuer"), _str(data, "client_id")
        if issuer is None or client_id is None:
            return None
        return cls(
            issuer=issuer,
            client_id=client_id,
            client_secret=_str(data, "client_secret"),
            auth_method=_str(data, "auth_method"),
            redirect_uris=_strs(data, "redirect_uris"),
            source=_str(data, "source") or "dcr",
        )


@dataclass(frozen=True)
class Discovery:
    """Where a server's tokens come from, cached so a new process can refresh at once.

    Attributes:
        server_url: the MCP endpoint this was discovered for.
        resource: the ``resource`` to ask tokens for (the metadata's exact string).
        issuer: the authorization server's issuer identifier.
        server_metadata: the authorization server's metadata (or the default endpoints).
        resource_metadata: the protected-resource metadata, ``None`` for a server
            without one (2025-03-26).
    """

    server_url: str
    resource: str
    issuer: str
    server_metadata: dict[str, Any]
    resource_metadata: dict[str, Any] | None = None

    def endpoint(self, name: str) -> str | None:
        """An endpoint of the authorization server (``token_endpoint``, ...)."""
        return _str(self.server_metadata, name)

    def server_list(self, name: str) -> tuple[str, ...] | None:
        """A list field of the server metadata; ``None`` when absent."""
        if name not in self.server_metadata:
            return None
        return _strs(self.server_metadata, name)

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict for a store."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Discovery | None:
        """Rebuild from `to_json` output; ``None`` for a record that does not fit."""
        server_url, resource, issuer = (
            _str(data, "server_url"),
            _str(data, "resource"),
            _str(data, "issuer"),
        )
        server_metadata = data.get("server_metadata")
        resource_metadata = data.get("resource_metadata")
        if server_url is None or resource is None or issuer is None:
            return None
        if not isinstance(server_metadata, dict):
            return None
        return cls(
            server_url=server_url,
            resource=resource,
            issuer=issuer,
            server_metadata=server_metadata,
            resource_metadata=resource_metadata if isinstance(resource_metadata, dict) else None,
        )


publish("mrtr.auth", ClientRegistration, Discovery, TokenSet)
