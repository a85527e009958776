"""HTTP/1.1 for the inspector's page, sans I/O: parse a request, guard it, write a response.

The page is served on loopback only. A request is refused unless its ``Host`` is this
server's loopback address (a DNS-rebound name is not), its ``Origin`` (when sent) is the
page's own, and, for the API, it carries the random token in ``X-Inspect-Token`` (a
custom header: a cross-site page cannot send it without a preflight nobody answers).
Every response forbids inline script, framing, sniffing and referrers.
"""

from __future__ import annotations

import hmac
import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlsplit

__all__ = [
    "MAX_BODY",
    "MAX_HEAD",
    "HTTPError",
    "Request",
    "Response",
    "guard",
    "parse_head",
    "security_headers",
]

MAX_HEAD = 16 * 1024
"""The longest request line plus headers accepted, in bytes."""
MAX_BODY = 1024 * 1024
"""The largest request body accepted, in bytes (answers and call arguments)."""
MAX_HEADERS = 100

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"
)
"""No inline script or style, nothing from elsewhere: server text can only ever be text."""

TOKEN_HEADER = "x-inspect-token"


class HTTPError(Exception):
    """A request refused before it reaches a route: its status and a short reason."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


@dataclass(slots=True)
class Request:
    """One parsed request."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes = b""

    @property
    def content_length(self) -> int:
        """The declared body length (0 when absent).

        Raises:
            HTTPError: not a number, or over `MAX_BODY`.
        """
        raw = self.headers.get("content-length", "0")
        if not raw.isdigit():
            raise HTTPError(400, "bad Content-Length")
        length = int(raw)
        if length > MAX_BODY:
            raise HTTPError(413, "body too large")
        return length

    def json(self) -> Any:
        """The body as JSON.

        Raises:
            HTTPError: not JSON.
        """
        try:
            return json.loads(self.body or b"null")
        except ValueError:
            raise HTTPError(400, "the body is not JSON") from None


@dataclass(slots=True)
class Response:
    """A response to write."""

    status: int
    body: bytes
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of_json(cls, data: Any, status: int = 200) -> Response:
        """A JSON response."""
        return cls(status, json.dumps(data, separators=(",", ":")).encode())

    def to_bytes(self) -> bytes:
        """The whole response (the connection closes after it)."""
        reason = _REASONS.get(self.status, "Status")
        lines = [f"HTTP/1.1 {self.status} {reason}", f"Content-Type: {self.content_type}"]
        lines.append(f"Content-Length: {len(self.body)}")
        lines.append("Connection: close")
        for name, value in {**security_headers(), **self.headers}.items():
            lines.append(f"{name}: {value}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + self.body


_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden",
            404: "Not Found", 405: "Method Not Allowed", 409: "Conflict",
            413: "Payload Too Large", 415: "Unsupported Media Type", 421: "Misdirected Request",
            431: "Request Header Fields Too Large"}  # fmt: skip


def security_headers() -> dict[str, str]:
    """The headers every response carries."""
    return {
        "Content-Security-Policy": CSP,
        "X-Content-Type-Options": "nosniff",
        "X-Frame-Options": "DENY",
        "Referrer-Policy": "no-referrer",
        "Cross-Origin-Resource-Policy": "same-origin",
        "Cross-Origin-Opener-Policy": "same-origin",
        "Cache-Control": "no-store",
    }


def parse_head(head: bytes) -> Request:
    """The request line and headers (everything before the blank line).

    Raises:
        HTTPError: malformed, or too many headers.
    """
    try:
        text = head.decode("latin-1")
    except UnicodeDecodeError:  # pragma: no cover - latin-1 decodes every byte
        raise HTTPError(400, "bad request") from None
    lines = text.split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise HTTPError(400, "bad request line")
    method, target, _ = parts
    if len(lines) - 1 > MAX_HEADERS:
        raise HTTPError(431, "too many headers")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep or not name or name != name.strip():
            raise HTTPError(400, "bad header")
        lowered = name.lower()
        if lowered in headers and lowered in ("host", "origin", TOKEN_HEADER, "content-length"):
            raise HTTPError(400, f"repeated {name}")
        headers[lowered] = value.strip()
    split = urlsplit(target)
    if split.scheme or split.netloc or not split.path.startswith("/"):
        raise HTTPError(400, "bad request target")
    return Request(method, split.path, dict(parse_qsl(split.query)), headers)


def guard(request: Request, port: int, token: str) -> None:
    """Refuse what did not come from the page this server gave out.

    Raises:
        HTTPError: 421 for another Host (DNS rebinding), 403 for another Origin or a
            cross-site fetch, 401 for an API request without the token, 415 for a POST
            that is not JSON.
    """
    allowed_hosts = {f"127.0.0.1:{port}", f"localhost:{port}"}
    if request.headers.get("host", "").lower() not in allowed_hosts:
        raise HTTPError(421, "this server answers only on its loopback address")
    origin = request.headers.get("origin")
    if origin is not None and origin.lower() not in {f"http://{h}" for h in allowed_hosts}:
        raise HTTPError(403, "another origin")
    if request.headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
        raise HTTPError(403, "a cross-site request")
    if request.path.startswith("/api/"):
        given = request.headers.get(TOKEN_HEADER, "")
        if not hmac.compare_digest(given.encode(), token.encode()):
            raise HTTPError(401, "missing or wrong token")
        if request.method == "POST":
            kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
            if kind != "application/json":
                raise HTTPError(415, "POST application/json")
