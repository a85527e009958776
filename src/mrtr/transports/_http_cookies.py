"""Cookies the MCP endpoint sets, sent back to it: the own client's small cookie jar.

httpx keeps a cookie jar per client, and some deployments rely on it (a load balancer's
affinity cookie keeps a legacy session on one replica). The own client talks to a single
origin, so the jar needs no domain or path matching: it keeps ``name=value`` pairs,
forgets those expired by ``Max-Age`` or ``Expires``, and sends ``Secure`` ones only
over https. The number and size of cookies are capped, as browsers cap them.

A cookie is refused on arrival unless its name is a token and its value is made of
RFC 6265's cookie-octets (no control characters, DEL, spaces or bytes past ASCII): a
stored cookie rides on every later request, so one that cannot be sent back would
break the client for good. Lifetimes are capped at 400 days (RFC 6265bis), which also
bounds the digits of a ``Max-Age`` a server may send.
"""

from __future__ import annotations

import email.message
import email.utils
import http.cookiejar
import re
import time
from typing import Any, cast

__all__ = ["MAX_COOKIES", "MAX_COOKIE_AGE", "MAX_COOKIE_SIZE", "CookieJar", "SafeCookieJar"]

MAX_COOKIES = 50
MAX_COOKIE_SIZE = 4096
MAX_COOKIE_AGE = 400 * 24 * 3600
"""The longest a cookie is kept, in seconds (RFC 6265bis caps Max-Age and Expires)."""

_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_VALUE = re.compile(r'"?[\x21\x23-\x2b\x2d-\x3a\x3c-\x5b\x5d-\x7e]*"?')
_DIGITS = re.compile(r"-?[0-9]+")


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
        name, value = name.strip(" \t"), value.strip(" \t")
        if not equals or _NAME.fullmatch(name) is None or not _valid_value(value):
            return
        expires, secure = _attributes(attributes)
        if expires is not None and expires <= time.time():
            self._cookies.pop(name, None)
        elif name in self._cookies or len(self._cookies) < MAX_COOKIES:
            self._cookies[name] = (value, expires, secure)


class SafeCookieJar(http.cookiejar.CookieJar):
    """The cookie jar of the httpx clients the transport makes: this module's rules first.

    httpx's jar (``http.cookiejar``) stores a value that h11 then refuses to send, so
    every later request would fail, and a ``Max-Age`` of hundreds of digits overflows
    inside it. Here each ``Set-Cookie`` passes the checks of `CookieJar` first: a
    cookie that breaks RFC 6265's grammar is dropped, and ``Max-Age`` is capped at
    `MAX_COOKIE_AGE`, before ``http.cookiejar`` reads the rest.
    """

    def make_cookies(self, response: Any, request: Any) -> Any:
        return super().make_cookies(cast(Any, _Sanitized(response)), request)


class _Sanitized:
    """A response as ``http.cookiejar`` sees it, with its ``Set-Cookie`` lines checked."""

    def __init__(self, response: Any) -> None:
        self._response = response

    def info(self) -> email.message.Message:
        cleaned = email.message.Message()
        for name, value in self._response.info().items():
            if name.lower() == "set-cookie":
                value = _sanitized(value)
                if value is None:
                    continue
            cleaned[name] = value
        return cleaned


def _sanitized(line: str) -> str | None:
    if len(line) > MAX_COOKIE_SIZE:
        return None
    pair, *attributes = line.split(";")
    name, equals, value = pair.partition("=")
    if not equals or _NAME.fullmatch(name.strip(" \t")) is None:
        return None
    if not _valid_value(value.strip(" \t")):
        return None
    parts = [pair]
    for attribute in attributes:
        key, _, argument = attribute.strip().partition("=")
        if key.lower() == "max-age" and len(argument.strip()) > 10:
            attribute = f" Max-Age={'-1' if argument.strip().startswith('-') else MAX_COOKIE_AGE}"
        parts.append(attribute)
    return ";".join(parts)


def _valid_value(value: str) -> bool:
    """Cookie-octets only, optionally in one pair of double quotes (RFC 6265 4.1.1)."""
    if _VALUE.fullmatch(value) is None:
        return False
    quoted = value.startswith('"')
    return quoted == (len(value) >= 2 and value.endswith('"')) or value == ""


def _attributes(attributes: list[str]) -> tuple[float | None, bool]:
    """When a cookie expires (``Max-Age`` wins over ``Expires``), and if it is ``Secure``."""
    max_age: float | None = None
    expires: float | None = None
    secure = False
    now = time.time()
    for attribute in attributes:
        key, _, argument = attribute.strip().partition("=")
        key, argument = key.lower(), argument.strip()
        if key == "max-age" and _DIGITS.fullmatch(argument):
            # the sign and the length say enough: no integer of a server's size is built
            if argument.startswith("-") or argument.lstrip("0") == "":
                max_age = now - 1
            elif len(argument) > 10:
                max_age = now + MAX_COOKIE_AGE
            else:
                max_age = now + min(int(argument), MAX_COOKIE_AGE)
        elif key == "expires":
            try:
                when = email.utils.parsedate_to_datetime(argument).timestamp()
            except (TypeError, ValueError, IndexError, OverflowError):
                continue
            expires = min(when, now + MAX_COOKIE_AGE)
        elif key == "secure":
            secure = True
    return (max_age if max_age is not None else expires), secure
