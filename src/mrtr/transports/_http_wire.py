"""Pure helpers of the HTTP transport: the wire's shapes, and httpx's errors translated.

No state and no connection here: content types, body excerpts, JSON parsing into the
one response a POST is for, SSE event parsing, capped body reads, the caller's headers
filtered, and `translate_http_errors`, the one place httpx's exceptions become mrtr's.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import httpx

from mrtr.errors import MessageTooLargeError, ProtocolError, RequestTimeoutError, TransportError
from mrtr.transports._base import JSONObject, RequestId
from mrtr.types._constants import META_PROTOCOL_VERSION

__all__ = [
    "ACCEPT_POST",
    "ACCEPT_SSE",
    "EXCERPT",
    "as_response",
    "content_type",
    "encode_body",
    "excerpt",
    "is_response_to",
    "meta_version",
    "parse_event",
    "parse_json",
    "parsed_url",
    "read_capped",
    "retry_seconds",
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
        "content-type",
        "last-event-id",
        "mcp-method",
        "mcp-name",
        "mcp-protocol-version",
        "mcp-session-id",
    }
)
_DEFAULT_RETRY_MS = 1000
_MAX_RETRY_MS = 60_000


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
    except httpx.HTTPError as exc:
        raise TransportError(f"{method}: HTTP request failed: {exc!r}") from exc


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


def parsed_url(url: str) -> httpx.URL | str:
    """The URL, parsed once.

    httpx parses a string URL again on every request, a measurable share of a round's
    CPU. A URL httpx cannot parse is kept as the string, so each request reports it as
    before.
    """
    try:
        return httpx.URL(url)
    except Exception:
        return url


def encode_body(message: JSONObject) -> bytes:
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def meta_version(message: JSONObject) -> str | None:
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    version = meta.get(META_PROTOCOL_VERSION) if isinstance(meta, dict) else None
    return version if isinstance(version, str) else None


def content_type(response: httpx.Response) -> str:
    value: str = response.headers.get("content-type", "")
    return value.split(";")[0].strip().lower()


def excerpt(body: bytes) -> str:
    text = body[:EXCERPT].decode("utf-8", errors="replace")
    return repr(text + ("..." if len(body) > EXCERPT else ""))


def parse_json(body: bytes, *, method: str, status: int) -> Any:
    try:
        return json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ProtocolError(
            f"the server answered {method} with HTTP {status} and a body that is not JSON "
            f"({exc}): {excerpt(body)}",
            method=method,
        ) from exc


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


def parse_event(data: str) -> JSONObject | None:
    try:
        parsed = json.loads(data)
    except json.JSONDecodeError as exc:
        logger.warning("dropping an unparseable SSE message (%s): %r", exc, data[:EXCERPT])
        return None
    if not isinstance(parsed, dict):
        logger.warning("dropping an SSE message that is not a JSON object: %r", data[:EXCERPT])
        return None
    return parsed


def is_response_to(message: Any, request_id: RequestId) -> bool:
    return (
        isinstance(message, dict)
        and "method" not in message
        and message.get("id") == request_id
        and ("result" in message or "error" in message)
    )


def retry_seconds(retry_ms: int | None) -> float:
    value = _DEFAULT_RETRY_MS if retry_ms is None else min(retry_ms, _MAX_RETRY_MS)
    return value / 1000


async def read_capped(response: httpx.Response, cap: int, *, limit: int | None = None) -> bytes:
    """Read a body without ever holding more than `cap` (or `limit`, silently cut).

    Raises:
        MessageTooLargeError: the body is over `cap` (only without `limit`).
    """
    cap = cap if limit is None else limit
    declared = response.headers.get("content-length", "")
    if limit is None and declared.isdigit() and int(declared) > cap:
        raise MessageTooLargeError(int(declared), cap)
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body.extend(chunk)
        if len(body) > cap:
            if limit is not None:
                return bytes(body[:limit])
            raise MessageTooLargeError(len(body), cap)
    return bytes(body)
