"""Finding a server's authorization server, in the order the MCP spec sets.

The pure rules (candidate URLs, the resource check, scope choice, the RFC 9207 table)
are plain functions; `discover` walks the candidates over `OAuthHTTP`.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import urlsplit

from mrtr.auth._http import OAuthHTTP
from mrtr.auth._records import Discovery
from mrtr.errors import DiscoveryError, IssuerMismatchError, ResourceMismatchError

__all__ = [
    "check_pkce",
    "check_response_issuer",
    "discover",
    "metadata_candidates",
    "origin_of",
    "resource_candidates",
    "resource_covers",
    "select_scopes",
]

logger = logging.getLogger("mrtr.auth")

_PRM = "/.well-known/oauth-protected-resource"
_OAUTH_AS = "/.well-known/oauth-authorization-server"
_OIDC = "/.well-known/openid-configuration"
_PROTOCOL_HEADERS = {"MCP-Protocol-Version": "2025-11-25"}


def origin_of(url: str) -> str:
    """``scheme://host[:port]`` exactly as written in ``url``."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _path_of(url: str) -> str:
    path = urlsplit(url).path
    return "" if path in ("", "/") else path.rstrip("/")


def resource_candidates(server_url: str, header_url: str | None) -> list[str]:
    """Protected-resource metadata URLs: the challenge's, else path-based, then root."""
    if header_url:
        return [header_url]
    origin, path = origin_of(server_url), _path_of(server_url)
    candidates = [f"{origin}{_PRM}{path}"] if path else []
    candidates.append(f"{origin}{_PRM}")
    return candidates


def metadata_candidates(issuer: str) -> list[str]:
    """Authorization-server metadata URLs for ``issuer``, RFC 8414 then OIDC, in order."""
    origin, path = origin_of(issuer), _path_of(issuer)
    if path:
        return [f"{origin}{_OAUTH_AS}{path}", f"{origin}{_OIDC}{path}", f"{origin}{path}{_OIDC}"]
    return [f"{origin}{_OAUTH_AS}", f"{origin}{_OIDC}"]


def resource_covers(resource: str, server_url: str) -> bool:
    """True when ``resource`` is the server URL or a parent of it (same origin, path prefix).

    The prefix must end on a path segment boundary: ``/mcp`` covers ``/mcp/x`` but not
    ``/mcpx``.
    """
    res, url = urlsplit(resource), urlsplit(server_url)
    if res.fragment or (res.scheme.lower(), res.netloc.lower()) != (
        url.scheme.lower(),
        url.netloc.lower(),
    ):
        return False
    prefix = res.path.rstrip("/")
    path = url.path or "/"
    return not prefix or path == prefix or path.startswith(prefix + "/")


def select_scopes(
    *,
    challenged: tuple[str, ...],
    resource_metadata: dict[str, Any] | None,
    server_metadata: dict[str, Any],
    extra: tuple[str, ...] = (),
    previous: tuple[str, ...] = (),
    offline_access: bool = True,
) -> tuple[str, ...]:
    """The scopes to ask for, in the spec's order, as an ordered set.

    The challenge's scope, else every scope the protected resource lists, else none;
    then the caller's own and any held before (step-up keeps them). ``offline_access``
    is added only when the authorization server lists it and something else is asked.
    """
    chosen: tuple[str, ...] = challenged
    if not chosen and resource_metadata is not None:
        listed = resource_metadata.get("scopes_supported")
        if isinstance(listed, list):
            chosen = tuple(s for s in listed if isinstance(s, str))
    scopes = tuple(dict.fromkeys((*previous, *chosen, *extra)))
    supported = server_metadata.get("scopes_supported")
    if (
        offline_access
        and scopes
        and "offline_access" not in scopes
        and isinstance(supported, list)
        and "offline_access" in supported
    ):
        scopes = (*scopes, "offline_access")
    return scopes


def check_response_issuer(
    *, advertised: bool, iss: str | None, expected: str, server_url: str
) -> None:
    """Apply RFC 9207 to an authorization response: compare exactly, or reject.

    Raises:
        IssuerMismatchError: ``iss`` differs from ``expected``, or is missing although the
            authorization server said it sends one.
    """
    if iss is None:
        if advertised:
            raise IssuerMismatchError("response", expected, None, server_url=server_url)
        return
    if iss != expected:
        raise IssuerMismatchError("response", expected, iss, server_url=server_url)


async def discover(http: OAuthHTTP, server_url: str, header_url: str | None) -> Discovery:
    """Find the protected resource's authorization server and its metadata.

    Raises:
        ResourceMismatchError: the resource metadata does not cover ``server_url``.
        IssuerMismatchError: a metadata document declared another issuer.
        DiscoveryError: metadata was found but no usable authorization server.
    """
    tried: list[tuple[str, str]] = []
    resource_metadata: dict[str, Any] | None = None
    candidates = resource_candidates(server_url, header_url)
    if header_url:  # the named document first; should it fail, the well-known ones
        candidates += [u for u in resource_candidates(server_url, None) if u != header_url]
    for url in candidates:
        reply = await http.get_json(url, _PROTOCOL_HEADERS)
        tried.append((url, str(reply.status)))
        if reply.ok and reply.json is not None:
            resource_metadata = reply.json
            break
    if resource_metadata is None:
        return await _legacy_discovery(http, server_url, tried)
    resource = resource_metadata.get("resource")
    if not isinstance(resource, str) or not resource_covers(resource, server_url):
        raise ResourceMismatchError(str(resource), server_url=server_url)
    servers = resource_metadata.get("authorization_servers")
    if not isinstance(servers, list) or not servers or not isinstance(servers[0], str):
        raise DiscoveryError(
            "the protected-resource metadata names no authorization server",
            server_url=server_url,
            tried=tuple(tried),
        )
    issuer: str = servers[0]
    metadata = await _server_metadata(http, issuer, server_url, tried)
    if metadata is None:
        raise DiscoveryError(
            f"no authorization-server metadata found for {issuer!r}",
            server_url=server_url,
            tried=tuple(tried),
        )
    return Discovery(server_url, resource, issuer, metadata, resource_metadata)


async def _server_metadata(
    http: OAuthHTTP, issuer: str, server_url: str, tried: list[tuple[str, str]]
) -> dict[str, Any] | None:
    for url in metadata_candidates(issuer):
        reply = await http.get_json(url, _PROTOCOL_HEADERS)
        tried.append((url, str(reply.status)))
        if not reply.ok or reply.json is None:
            continue
        declared = reply.json.get("issuer")
        if declared != issuer:
            raise IssuerMismatchError(
                "metadata",
                issuer,
                declared if isinstance(declared, str) else None,
                server_url=server_url,
            )
        return reply.json
    return None


async def _legacy_discovery(
    http: OAuthHTTP, server_url: str, tried: list[tuple[str, str]]
) -> Discovery:
    """A server without resource metadata (2025-03-26): its origin is the issuer."""
    issuer = origin_of(server_url)
    logger.info("no protected-resource metadata for %s: trying %s", server_url, issuer)
    metadata = await _server_metadata(http, issuer, server_url, tried)
    if metadata is None:
        metadata = {
            "issuer": issuer,
            "authorization_endpoint": f"{issuer}/authorize",
            "token_endpoint": f"{issuer}/token",
            "registration_endpoint": f"{issuer}/register",
            "mrtr_default_endpoints": True,
        }
    return Discovery(server_url, server_url, issuer, metadata, None)


def check_pkce(discovery: Discovery, *, require_advertised: bool = True) -> None:
    """Refuse an authorization server that does not say it supports PKCE with S256.

    The default endpoints of a server without metadata (2025-03-26) are exempt: there
    is nothing to check.

    Raises:
        DiscoveryError: S256 is not advertised.
    """
    metadata, server_url = discovery.server_metadata, discovery.server_url
    methods = metadata.get("code_challenge_methods_supported")
    if metadata.get("mrtr_default_endpoints") or (methods is None and not require_advertised):
        return
    if not isinstance(methods, list) or "S256" not in methods:
        raise DiscoveryError(
            "the authorization server does not advertise PKCE S256 "
            "(code_challenge_methods_supported); refusing to authorize",
            server_url=server_url,
        )
