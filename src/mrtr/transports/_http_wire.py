"""Pure helpers of the HTTP transport: the wire's shapes, and httpx's errors translated.

No state and no connection here: content types, body excerpts, JSON parsing into the
one response a POST is for, SSE event parsing, capped body reads, the caller's headers
filtered, and `translate_http_errors`, the one place httpx's exceptions become mrtr's.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import aclosing, asynccontextmanager
from typing import Any, Protocol

import anyio.lowlevel
import httpx

from mrtr._wire._speedups import loads_object
from mrtr._wire.depth import PEER_MAX_JSON_DEPTH, nested_deeper_than
from mrtr.errors import (
    AuthError,
    AuthorizationRequiredError,
    InsufficientScopeError,
    MessageTooLargeError,
    ProtocolError,
    RedirectError,
    RequestTimeoutError,
    TransportError,
)
from mrtr.transports._base import JSONObject, RequestId
from mrtr.transports._http_decoding import body_decoder
from mrtr.types._constants import META_PROTOCOL_VERSION

__all__ = [
    "ACCEPT_POST",
    "ACCEPT_SSE",
    "EXCERPT",
    "HTTPResponse",
    "answer_to",
    "as_response",
    "auth_error",
    "content_type",
    "decoded_body",
    "error_response",
    "excerpt",
    "is_response",
    "is_response_to",
    "is_valid_id",
    "meta_version",
    "origin",
    "parse_event",
    "parse_json",
    "parsed_url",
    "read_capped",
    "retry_seconds",
    "same_origin_target",
    "session_id_of",
    "translate_http_errors",
    "user_headers",
]

logger = logging.getLogger("mrtr.transports.http")

ACCEPT_POST = "application/json, text/event-stream"
ACCEPT_SSE = "text/event-stream"
EXCERPT = 200
_PROTOCOL_HEADERS = frozenset(
    {
        "accept",
        "accept-encoding",
        "content-type",
        "last-event-id",
        "mcp-method",
        "mcp-name",
        "mcp-protocol-version",
        "mcp-session-id",
    }
)
_VISIBLE_ASCII = re.compile(r"[\x21-\x7e]+")
_DEFAULT_RETRY_MS = 1000
_MAX_RETRY_MS = 60_000


class HTTPResponse(Protocol):
    """What the transport reads of a response: httpx's, or the own client's."""

    @property
    def status_code(self) -> int: ...
    @property
    def reason_phrase(self) -> str: ...
    @property
    def headers(self) -> httpx.Headers: ...
    @property
    def url(self) -> httpx.URL: ...
    @property
    def is_success(self) -> bool: ...
    def aiter_raw(self) -> AsyncIterator[bytes]: ...


@asynccontextmanager
async def translate_http_errors(
    method: str, request_id: RequestId | None, read_timeout: float | None
) -> AsyncIterator[None]:
    """The one place httpx's exceptions become mrtr's.

    Raises:
        RequestTimeoutError: a response stalled past the read timeout.
        TransportError: anything else httpx raised (connection refused, reset, ...).
    """
    try:
        yield
    except httpx.ReadTimeout as exc:
        if request_id is None:
            raise TransportError(f"{method}: the server stalled past the read timeout") from exc
        raise RequestTimeoutError(method, request_id, read_timeout or 0.0) from exc
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        raise TransportError(f"{method}: HTTP request failed: {exc!r}") from exc
    except UnicodeEncodeError as exc:  # httpx sends header values as ASCII
        raise TransportError(
            # not the value itself: it may be a credential
            f"{method}: a header value holds a non-ASCII character and cannot be sent"
        ) from exc


async def decoded_body(response: HTTPResponse) -> AsyncGenerator[bytes, None]:
    """The body's bytes, decoded in bounded pieces (see `_http_decoding`).

    Raises:
        ProtocolError: the body's encoding is stacked, unknown or corrupt.
    """
    if isinstance(response, httpx.Response) and response.is_stream_consumed:
        # a caller's httpx transport that made the body in memory (a MockTransport):
        # httpx has read and decoded it already, there is nothing left to bound
        yield response.content
        return
    decoder = body_decoder(response.headers.get("content-encoding"))
    if decoder is None:
        async for chunk in response.aiter_raw():
            yield chunk
        return
    async for chunk in response.aiter_raw():
        for index, piece in enumerate(decoder.feed(chunk)):
            if index:
                await anyio.lowlevel.checkpoint()  # a bomb decodes in many pieces: stay fair
            yield piece
    tail = decoder.flush()
    if tail:
        yield tail


def session_id_of(response: HTTPResponse) -> str | None:
    """The ``Mcp-Session-Id`` a response assigns, checked before it is ever sent back.

    Raises:
        ProtocolError: the id is not one or more visible ASCII characters (0x21-0x7E),
            as the spec requires; sending it back would fail (or smuggle bytes).
    """
    raw = response.headers.get_list("mcp-session-id")
    if not raw:
        return None
    value = raw[0]
    if len(raw) > 1 or _VISIBLE_ASCII.fullmatch(value) is None:
        shown = b", ".join(v for k, v in response.headers.raw if k.lower() == b"mcp-session-id")
        raise ProtocolError(
            f"the server assigned an Mcp-Session-Id that is not visible ASCII: {shown!r}",
            method="initialize",
        )
    return value


def origin(url: httpx.URL) -> str:
    """``scheme://host[:port]`` of `url` (the port only when it is not the default)."""
    default = {"http": 80, "https": 443}.get(url.scheme)
    port = url.port or default
    return f"{url.scheme}://{url.host}" + (f":{port}" if port != default else "")


def same_origin_target(current: httpx.URL, location: str) -> httpx.URL:
    """Where a redirect from ``current`` points, if it is the same origin.

    Raises:
        RedirectError: the target is another origin (or not a URL at all).
    """
    try:
        target = current.join(location)
    except httpx.InvalidURL as exc:
        raise RedirectError(
            f"the server at {origin(current)} redirected to {location!r}, which is not a URL",
            location=location,
            origin="",
        ) from exc
    if origin(target) != origin(current):
        raise RedirectError(
            f"the server at {origin(current)} redirected to another origin, "
            f"{origin(target)}; the request (and its credentials) was not sent there",
            location=str(target),
            origin=origin(target),
        )
    return target


def user_headers(headers: Mapping[str, str] | None) -> dict[str, str]:
    """Keep the caller's headers, minus those the protocol sets per message."""
    kept: dict[str, str] = {}
    for name, value in (headers or {}).items():
        lowered = name.lower()
        if lowered in _PROTOCOL_HEADERS or lowered.startswith("mcp-param-"):
            logger.warning("ignoring the %s header: the transport sets it per message", name)
            continue
        kept[name] = value
    return kept


def parsed_url(url: str) -> httpx.URL:
    """The URL, checked and parsed once.

    httpx parses a string URL again on every request; and a typo is better reported
    where the transport is built than as a failed request later.

    Raises:
        ValueError: the URL cannot be parsed, or is not an absolute http(s) URL.
    """
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError) as exc:
        raise ValueError(f"not a valid URL: {url!r} ({exc})") from exc
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ValueError(f"not an absolute http(s) URL: {url!r}")
    return parsed


def meta_version(message: JSONObject) -> str | None:
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    version = meta.get(META_PROTOCOL_VERSION) if isinstance(meta, dict) else None
    return version if isinstance(version, str) else None


def content_type(response: HTTPResponse) -> str:
    value: str = response.headers.get("content-type", "")
    return value.split(";")[0].strip().lower()


def excerpt(body: bytes) -> str:
    text = body[:EXCERPT].decode("utf-8", errors="replace")
    return repr(text + ("..." if len(body) > EXCERPT else ""))


def parse_json(
    body: bytes, *, method: str, status: int, max_depth: int = PEER_MAX_JSON_DEPTH
) -> Any:
    try:
        if body[:1] == b"{" and body[1:2] != b"\x00":
            # what `json.loads` does with these bytes (their encoding is UTF-8), shorter
            value = loads_object(body.decode("utf-8", "surrogatepass"))
        else:
            value = json.loads(body)
    except (ValueError, RecursionError) as exc:  # bad UTF-8 or JSON, 4,300+ digits, too deep
        raise ProtocolError(
            f"the server answered {method} with HTTP {status} and a body that is not JSON "
            f"({exc}): {excerpt(body)}",
            method=method,
        ) from exc
    if nested_deeper_than(body, value, max_depth):  # as deep, on any Python
        raise ProtocolError(
            f"the server answered {method} with HTTP {status} and JSON nested over "
            f"{max_depth} deep: {excerpt(body)}",
            method=method,
        )
    return value


def as_response(parsed: Any, request: JSONObject) -> JSONObject:
    method: str = request["method"]
    error = parsed.get("error") if isinstance(parsed, dict) else None
    if isinstance(error, dict) and parsed.get("id") is None and "method" not in parsed:
        return {"jsonrpc": "2.0", "id": request["id"], "error": error}  # an id-less error
    if not is_response_to(parsed, request["id"]):
        raise ProtocolError(
            f"the server answered {method} (id {request['id']}) with JSON that is not its "
            f"response: {excerpt(json.dumps(parsed).encode())}",
            method=method,
        )
    result: JSONObject = parsed
    return result


def parse_event(data: str, *, max_depth: int = PEER_MAX_JSON_DEPTH) -> JSONObject | None:
    try:
        parsed = json.loads(data)
    except (ValueError, RecursionError) as exc:  # bad JSON, 4,300+ digits, too deep
        logger.warning("dropping an unparseable SSE message (%s): %r", exc, data[:EXCERPT])
        return None
    if nested_deeper_than(data, parsed, max_depth):
        logger.warning("dropping an SSE message nested over %d deep: %r", max_depth, data[:EXCERPT])
        return None
    if not isinstance(parsed, dict):
        logger.warning("dropping an SSE message that is not a JSON object: %r", data[:EXCERPT])
        return None
    return parsed


def answer_to(message: JSONObject, want: RequestId) -> JSONObject | None:
    """The response to request `want` that `message` is, if it is one.

    On a request's own response stream, a response whose id no request can have
    (``null``, ``true``, ``1.5``) can only be an answer to that request: an id-less
    error answers it; anything else is a broken answer.

    Raises:
        ProtocolError: a response with an invalid id that is not an id-less error.
    """
    if is_response_to(message, want):
        return message
    if not is_response(message) or is_valid_id(message.get("id")):
        return None
    if message.get("id") is None and isinstance(message.get("error"), dict):
        return {"jsonrpc": "2.0", "id": want, "error": message["error"]}
    raise ProtocolError(
        f"the server answered request {want!r} with a response whose id "
        f"is {message.get('id')!r}, not a valid request id"
    )


async def error_response(
    message: JSONObject, response: HTTPResponse, cap: int, *, max_depth: int = PEER_MAX_JSON_DEPTH
) -> JSONObject:
    """Turn an HTTP error into the JSON-RPC error it carries, or raise a typed error.

    Raises:
        AuthError: a 401 (`AuthorizationRequiredError`) or 403 (`InsufficientScopeError`
            for a scope challenge), whatever the body says.
        TransportError: a 5xx without a JSON-RPC error.
        ProtocolError: another status without one.
        MessageTooLargeError: the body is over `cap`.
    """
    method: str = message["method"]
    if response.status_code in (401, 403):  # the body does not matter: not read
        raise auth_error(method, response)
    body = await read_capped(response, cap)
    try:
        parsed = json.loads(body)
    except (ValueError, RecursionError):
        parsed = None
    if nested_deeper_than(body, parsed, max_depth):
        parsed = None  # as unreadable as it is where the parser gives up first
    error = parsed.get("error") if isinstance(parsed, dict) else None
    if isinstance(error, dict) and isinstance(error.get("code"), int):
        return {"jsonrpc": "2.0", "id": message["id"], "error": error}
    status = response.status_code
    text = (
        f"the server answered {method} with HTTP {status} {response.reason_phrase} "
        f"and no JSON-RPC error: {excerpt(body)}"
    )
    if status >= 500:
        raise TransportError(text)
    raise ProtocolError(text, method=method)


_CHALLENGE_SCOPE = re.compile(r'scope="([^"]*)"')
_CHALLENGE_EXCERPT = 200


def auth_error(method: str, response: HTTPResponse) -> AuthError:
    """A final 401 or 403: an authorization problem, never evidence about the server's era."""
    url = str(response.url)
    status = response.status_code
    challenge = response.headers.get("www-authenticate", "")[:_CHALLENGE_EXCERPT]
    text = f"the server answered {method} with HTTP {status}" + (
        f" ({challenge})" if challenge else ""
    )
    if status == 401:
        return AuthorizationRequiredError(
            f"{text}: authorization required (mrtr.auth.OAuth gets and renews tokens)",
            server_url=url,
        )
    if "insufficient_scope" in challenge:
        scope = _CHALLENGE_SCOPE.search(challenge)
        required = tuple(scope.group(1).split()) if scope else ()
        return InsufficientScopeError(required, server_url=url)
    return AuthError(f"{text}: forbidden", server_url=url)


def is_response_to(message: Any, request_id: RequestId) -> bool:
    """Whether `message` is the response to `request_id` (ids match by type and value)."""
    return is_response(message) and _same_id(message.get("id"), request_id)


def is_response(message: Any) -> bool:
    """Whether `message` is a JSON-RPC response (a result or an error, no method)."""
    return (
        isinstance(message, dict)
        and "method" not in message
        and ("result" in message or "error" in message)
    )


def _same_id(received: Any, sent: RequestId) -> bool:
    """Ids match by type and value: JSON ``true`` or ``1.0`` is not the id ``1``."""
    return type(received) is type(sent) and received == sent


def is_valid_id(value: Any) -> bool:
    """Whether `value` is a request id a client sends (a string or an integer)."""
    return type(value) in (int, str)


def retry_seconds(retry_ms: int | None) -> float:
    value = _DEFAULT_RETRY_MS if retry_ms is None else min(retry_ms, _MAX_RETRY_MS)
    return value / 1000


async def read_capped(response: HTTPResponse, cap: int, *, limit: int | None = None) -> bytes:
    """Read a (decoded) body without ever holding more than `cap` (or `limit`, cut).

    Raises:
        MessageTooLargeError: the body is over `cap` (only without `limit`).
        ProtocolError: the body's encoding is stacked, unknown or corrupt.
    """
    cap = cap if limit is None else limit
    declared = response.headers.get("content-length", "")
    # ASCII digits, at most 20 (as h11 and the own parser read them): no huge int built
    short = declared.isascii() and declared.isdigit() and len(declared) <= 20
    if limit is None and short and int(declared) > cap:
        raise MessageTooLargeError(int(declared), cap)
    body = bytearray()
    async with aclosing(decoded_body(response)) as chunks:
        async for chunk in chunks:
            body.extend(chunk)
            if len(body) > cap:
                if limit is not None:
                    return bytes(body[:limit])
                raise MessageTooLargeError(len(body), cap)
    return bytes(body)
