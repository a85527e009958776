"""The OAuth layer's own HTTP requests: through the user's httpx client, always bounded.

Every request carries a timeout that bounds the whole request (connect, send, every
read), and is sent without auth (never the MCP token to an authorization server) and
without following redirects unless asked. Bodies are decoded as the MCP transport
decodes them (`mrtr.transports._http_wire.decoded_body`: one layer of gzip or deflate,
counted after decoding) and read up to a cap. httpx failures become `AuthError` with no
URL query or body in the message.
"""

from __future__ import annotations

import json
from contextlib import aclosing
from typing import Any

import anyio
import httpx

from mrtr.errors import AuthError, ProtocolError
from mrtr.transports._http_decoding import ACCEPT_ENCODING
from mrtr.transports._http_wire import decoded_body

__all__ = ["MAX_BODY", "HTTPScope", "OAuthHTTP", "Reply"]

MAX_BODY = 1_048_576
"""The default cap on one metadata or token response body, in bytes."""


class Reply:
    """A read response: status, headers and the JSON body when it was a JSON object."""

    def __init__(self, status: int, headers: httpx.Headers, body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body
        self.json: dict[str, Any] | None = None
        try:
            parsed = json.loads(body) if body else None
        except (ValueError, RecursionError):  # bad UTF-8 or JSON, 4,300+ digits, too deep
            parsed = None
        if isinstance(parsed, dict):
            self.json = parsed

    @property
    def ok(self) -> bool:
        """True for a 2xx status."""
        return 200 <= self.status < 300


class OAuthHTTP:
    """Sends the OAuth requests with a fixed per-request timeout."""

    def __init__(self, client: httpx.AsyncClient, timeout: float, max_body: int = MAX_BODY) -> None:
        self.client = client
        self.timeout = timeout
        self.max_body = max_body

    async def request(
        self,
        method: str,
        url: str,
        *,
        headers: dict[str, str] | None = None,
        data: dict[str, str] | None = None,
        json_body: dict[str, Any] | None = None,
        follow_redirects: bool = False,
    ) -> Reply:
        """Send one request and read its reply (bounded).

        Raises:
            AuthError: the request failed or timed out.
        """
        sent = {"Accept": "application/json", **(headers or {})}
        sent["Accept-Encoding"] = ACCEPT_ENCODING  # what `decoded_body` can bound
        try:
            request = self.client.build_request(
                method, url, headers=sent, data=data, json=json_body, timeout=self.timeout
            )
        except (httpx.InvalidURL, httpx.UnsupportedProtocol, UnicodeEncodeError) as exc:
            raise AuthError(f"{method} {_printable(url)}: not a URL that can be requested") from exc
        try:
            with anyio.fail_after(self.timeout):  # the whole request, not each read
                response = await self.client.send(
                    request, auth=None, follow_redirects=follow_redirects, stream=True
                )
                try:
                    body = await _read_capped(response, self.max_body)
                finally:
                    await response.aclose()
        except (TimeoutError, httpx.TimeoutException) as exc:
            raise AuthError(
                f"{method} {_safe(url)} got no answer within {self.timeout:g} s"
            ) from exc
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            raise AuthError(f"{method} {_safe(url)} failed: {type(exc).__name__}") from exc
        except UnicodeEncodeError as exc:
            raise AuthError(f"{method} {_safe(url)}: a header is not ASCII") from exc
        return Reply(response.status_code, response.headers, body)

    async def get_json(self, url: str, headers: dict[str, str] | None = None) -> Reply:
        """GET a metadata document."""
        return await self.request("GET", url, headers=headers)


class HTTPScope:
    """An `OAuthHTTP` over the given client, or over a private one closed afterwards."""

    def __init__(self, client: httpx.AsyncClient | None, timeout: float, max_body: int) -> None:
        self._client = client if client is not None and not client.is_closed else None
        self._timeout = timeout
        self._max_body = max_body
        self._own: httpx.AsyncClient | None = None

    async def __aenter__(self) -> OAuthHTTP:
        client = self._client
        if client is None:
            client = self._own = httpx.AsyncClient()
        return OAuthHTTP(client, self._timeout, self._max_body)

    async def __aexit__(self, *exc: Any) -> None:
        if self._own is not None:
            with anyio.CancelScope(shield=True):
                await self._own.aclose()


async def _read_capped(response: httpx.Response, limit: int) -> bytes:
    """The decoded body, never holding more than `limit` bytes of it.

    Raises:
        AuthError: the body is over `limit` once decoded, or its encoding is stacked,
            unknown or corrupt.
    """
    chunks: list[bytes] = []
    size = 0
    try:
        async with aclosing(decoded_body(response)) as pieces:
            async for chunk in pieces:
                size += len(chunk)
                if size > limit:
                    raise AuthError(
                        f"a response from {_safe(str(response.url))} was over {limit} bytes "
                        "(raise OAuth(max_response_size=...) if this server is trusted)"
                    )
                chunks.append(chunk)
    except ProtocolError as exc:
        raise AuthError(f"a response from {_safe(str(response.url))}: {exc}") from exc
    return b"".join(chunks)


def _safe(url: str) -> str:
    """The URL without its query (an authorization URL's query is nobody's business)."""
    return _printable(url.split("?", 1)[0].split("#", 1)[0])


def _printable(text: str) -> str:
    """`text` with control characters escaped: a server's URL never paints a terminal."""
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text[:300])
