"""Cookies the MCP endpoint sets, sent back to it: the own client's small cookie jar.

httpx keeps a cookie jar per client, and some deployments rely on it (a load balancer's
affinity cookie keeps a legacy session on one replica). The own client talks to a single
origin, so the jar needs no domain or path matching: it keeps ``name=value`` pairs,
forgets those expired by ``Max-Age`` or ``Expires``, and sends ``Secure`` ones only
over https. The number and size of cookies are capped, as browsers cap them.
"""

from __future__ import annotations

import email.utils
import time

__all__ = ["MAX_COOKIES", "MAX_COOKIE_SIZE", "CookieJar"]

MAX_COOKIES = 50
MAX_COOKIE_SIZE = 4096


class CookieJar:
    """``name -> (value, expires_at or None, secure)`` for one origin."""

    def __init__(self, *, secure: bool) -> None:
        self._secure = secure
        self._cookies: dict[str, tuple[str, float | None, bool]] = {}

    def header(self) -> str:
        """The ``Cookie`` header value to send (empty when there is none)."""
        if not self._cookies:
            return ""
        now = time.time()
        kept = []
        for name, (value, expires, secure) in list(self._cookies.items()):
            if expires is not None and expires <= now:
                del self._cookies[name]
            elif self._secure or not secure:
                kept.append(f"{name}={value}")
        return "; ".join(kept)

    def learn(self, headers: list[tuple[bytes, bytes]]) -> None:
        """Take the ``Set-Cookie`` headers of a response."""
        for name, value in headers:
            if len(name) == 10 and name.lower() == b"set-cookie":
                self._take(value.decode("latin-1"))

    def _take(self, line: str) -> None:
        if len(line) > MAX_COOKIE_SIZE:
            return
        pair, *attributes = line.split(";")
        name, equals, value = pair.partition("=")
        name, value = name.strip(), value.strip()
        if not equals or not name or any(c in name + value for c in ',\r\n"\\'):
            return
        expires, secure = _attributes(attributes)
        if expires is not None and expires <= time.time():
            self._cookies.pop(name, None)
        elif name in self._cookies or len(self._cookies) < MAX_COOKIES:
            self._cookies[name] = (value, expires, secure)


def _attributes(attributes: list[str]) -> tuple[float | None, bool]:
    """When a cookie expires (``Max-Age`` wins over ``Expires``), and if it is ``Secure``."""
    max_age: float | None = None
    expires: float | None = None
    secure = False
    for attribute in attributes:
        key, _, argument = attribute.strip().partition("=")
        key = key.lower()
        if key == "max-age" and argument.strip().lstrip("-").isdigit():
            max_age = time.time() + int(argument)
        elif key == "expires":
            try:
                expires = email.utils.parsedate_to_datetime(argument).timestamp()
            except (TypeError, ValueError, IndexError, OverflowError):
                continue
        elif key == "secure":
            secure = True
    return (max_age if max_age is not None else expires), secure
