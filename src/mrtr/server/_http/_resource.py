"""OAuth protected-resource metadata (RFC 9728) in front of the streamable HTTP app.

With a token verifier, the server is an OAuth protected resource: clients learn where to
get tokens from ``/.well-known/oauth-protected-resource<path>``, and every 401 names that
document in its ``WWW-Authenticate`` challenge (``resource_metadata``). A thin ASGI wrapper:
it answers the metadata GET and rewrites the challenge of the app's 401s, nothing else.
"""

from __future__ import annotations

import json
from collections.abc import MutableMapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from mrtr._lazy import publish

if TYPE_CHECKING:
    from mrtr.server._http._app import ASGIApp, ASGIReceive, ASGISend, Scope

__all__ = ["ProtectedResource", "ProtectedResourceApp"]

_WELL_KNOWN = "/.well-known/oauth-protected-resource"


@dataclass(frozen=True)
class ProtectedResource:
    """What the server says about itself as an OAuth protected resource.

    Attributes:
        authorization_servers: issuer identifiers of the authorization servers whose
            tokens the server accepts (clients use the first).
        resource: the server's canonical URL (``https://example.com/mcp``); default:
            built from each request's scheme, ``Host`` and the endpoint path (set it
            behind a proxy).
        scopes_supported: the scopes a client may ask for.
        resource_name: a human-readable name.
    """

    authorization_servers: Sequence[str] = ()
    resource: str | None = None
    scopes_supported: Sequence[str] | None = None
    resource_name: str | None = None


class ProtectedResourceApp:
    """Serves the metadata document and adds ``resource_metadata`` to 401 challenges."""

    def __init__(self, app: ASGIApp, *, path: str, resource: ProtectedResource) -> None:
        self._app = app
        self._path = path.rstrip("/")
        self._resource = resource
        self._document_paths = {_WELL_KNOWN + self._path, _WELL_KNOWN}

    async def __call__(self, scope: Scope, receive: ASGIReceive, send: ASGISend) -> None:
        """Answer the metadata GET; pass everything else on, rewriting 401 challenges."""
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        if scope.get("path") in self._document_paths:
            await self._document(scope, send)
            return
        metadata_url = self._metadata_url(scope)

        async def challenge_send(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start" and message.get("status") == 401:
                message = {**message, "headers": _with_metadata(message, metadata_url)}
            await send(message)

        await self._app(scope, receive, challenge_send)

    def _resource_url(self, scope: Scope) -> str:
        if self._resource.resource is not None:
            return self._resource.resource
        return f"{_origin(scope)}{self._path}"

    def _metadata_url(self, scope: Scope) -> str:
        if self._resource.resource is not None:
            parts = urlsplit(self._resource.resource)
            path = parts.path.rstrip("/")
            return f"{parts.scheme}://{parts.netloc}{_WELL_KNOWN}{path}"
        return f"{_origin(scope)}{_WELL_KNOWN}{self._path}"

    async def _document(self, scope: Scope, send: ASGISend) -> None:
        if scope.get("method") not in ("GET", "HEAD"):
            await _reply(send, 405, b"", [(b"allow", b"GET")])
            return
        document: dict[str, Any] = {
            "resource": self._resource_url(scope),
            "authorization_servers": list(self._resource.authorization_servers),
            "bearer_methods_supported": ["header"],
        }
        if self._resource.scopes_supported is not None:
            document["scopes_supported"] = list(self._resource.scopes_supported)
        if self._resource.resource_name is not None:
            document["resource_name"] = self._resource.resource_name
        body = json.dumps(document).encode()
        await _reply(send, 200, body, [(b"content-type", b"application/json")])


def _origin(scope: Scope) -> str:
    host = ""
    for name, value in scope.get("headers", []):
        if name.lower() == b"host":
            host = value.decode("latin-1")
            break
    if not host:
        server = scope.get("server") or ("localhost", None)
        host = f"{server[0]}:{server[1]}" if server[1] else str(server[0])
    return f"{scope.get('scheme', 'http')}://{host}"


def _with_metadata(
    message: MutableMapping[str, Any], metadata_url: str
) -> list[tuple[bytes, bytes]]:
    headers: list[tuple[bytes, bytes]] = []
    found = False
    param = f'resource_metadata="{metadata_url}"'.encode("latin-1")
    for name, value in message.get("headers", []):
        if name.lower() == b"www-authenticate" and not found:
            found = True
            value = value + b", " + param if b" " in value.strip() else value + b" " + param
        headers.append((name, value))
    if not found:
        headers.append((b"www-authenticate", b"Bearer " + param))
    return headers


async def _reply(
    send: ASGISend, status: int, body: bytes, headers: list[tuple[bytes, bytes]]
) -> None:
    headers = [*headers, (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


publish("mrtr.server", ProtectedResource)
