"""Which ``Host`` and ``Origin`` headers the HTTP app serves (DNS rebinding protection).

A web page on a domain the attacker controls can make that domain resolve to 127.0.0.1
(DNS rebinding); the browser then sends the page's own domain in ``Host`` and
``Origin``. So ``Host`` must name this machine: a localhost name, the address the
request arrived at, or a name the operator allows. An ``Origin`` (sent by browsers) must
be a local page, the same origin as the request, or one the operator allows. Both are
checked before anything else runs. Sans-IO: plain strings in, a verdict out.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

__all__ = ["OriginPolicy"]

_LOCAL_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
_ANY = "*"


def split_host(value: str) -> tuple[str, int | None] | None:
    """``"name:port"`` (IPv6 in brackets) as a lower-case name and a port; ``None`` if broken."""
    value = value.strip().lower()
    if value.startswith("["):
        name, bracket, rest = value[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            return None
        port_text = rest[1:] if rest else None
    else:
        name, colon, port_text_or_empty = value.partition(":")
        if ":" in port_text_or_empty:
            return None
        port_text = port_text_or_empty if colon else None
    if not name:
        return None
    if port_text is None:
        return name, None
    if not port_text.isdigit() or len(port_text) > 5:
        return None
    return name, int(port_text)


class OriginPolicy:
    """The ``Host`` names and ``Origin`` values an app accepts beyond the local ones."""

    def __init__(self, *, allowed_hosts: Iterable[str], allowed_origins: Iterable[str]) -> None:
        hosts = [host.strip() for host in allowed_hosts]
        origins = [origin.strip().lower().rstrip("/") for origin in allowed_origins]
        self._any_host = _ANY in hosts
        self._any_origin = _ANY in origins
        self._hosts: set[tuple[str, int | None]] = set()
        for host in hosts:
            if host == _ANY:
                continue
            parsed = split_host(host)
            if parsed is None:
                raise ValueError(f"allowed_hosts: {host!r} is not a host name or host:port")
            self._hosts.add(parsed)
        self._origins = frozenset(origins)

    def host_allowed(self, host: str | None, local_address: str | None) -> bool:
        """Whether a request with this ``Host`` header, arriving at ``local_address``, is served."""
        if self._any_host:
            return True
        if host is None:
            return False
        parsed = split_host(host)
        if parsed is None:
            return False
        name, port = parsed
        if name in _LOCAL_NAMES or (local_address is not None and name == local_address.lower()):
            return True
        return (name, None) in self._hosts or (name, port) in self._hosts

    def origin_allowed(self, origin: str | None, host: str | None) -> bool:
        """Whether a request with this ``Origin`` (and an accepted ``Host``) is served."""
        if origin is None or self._any_origin:
            return True
        normalized = origin.strip().lower().rstrip("/")
        if normalized in self._origins:
            return True
        try:
            parts = urlsplit(normalized)
            hostname = parts.hostname
        except ValueError:
            return False
        if parts.scheme not in ("http", "https") or hostname is None:
            return False
        if hostname in _LOCAL_NAMES:
            return True
        return host is not None and parts.netloc == host.strip().lower()
