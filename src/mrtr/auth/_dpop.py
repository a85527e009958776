"""DPoP (RFC 9449): tokens bound to a key the client holds, proven on every request.

A proof is a fresh JWT signed with the client's key, naming the HTTP method and URL
(and, at a resource server, the hash of the access token). Servers may demand a nonce:
the one they last sent is kept per origin and echoed.
"""

from __future__ import annotations

import hashlib
import secrets
from urllib.parse import urlsplit, urlunsplit

from mrtr.auth._jose import SigningKey, b64url, generate_ec_pem

__all__ = ["DPoPKey", "htu_of"]


def htu_of(url: str) -> str:
    """The ``htu`` claim for ``url``: no query, no fragment."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


class DPoPKey:
    """The client's DPoP key (EC P-256), with the nonces servers handed out.

    Args:
        pem: the private key (PKCS#8 PEM); a new key when ``None``.
    """

    def __init__(self, pem: str | None = None) -> None:
        self.pem = pem or generate_ec_pem()
        self._key = SigningKey(self.pem, "ES256")
        self._jwk = self._key.public_jwk()
        self._nonces: dict[str, str] = {}

    def proof(self, method: str, url: str, *, now: float, access_token: str | None = None) -> str:
        """A fresh proof for one request (unique ``jti``; the origin's nonce if any)."""
        claims: dict[str, object] = {
            "jti": secrets.token_urlsafe(16),
            "htm": method.upper(),
            "htu": htu_of(url),
            "iat": int(now),
        }
        if access_token is not None:
            claims["ath"] = b64url(hashlib.sha256(access_token.encode()).digest())
        nonce = self._nonces.get(_origin(url))
        if nonce is not None:
            claims["nonce"] = nonce
        return self._key.sign(claims, {"typ": "dpop+jwt", "jwk": self._jwk})

    def learn_nonce(self, url: str, nonce: str | None) -> bool:
        """Keep a server's ``DPoP-Nonce``; True when it is new (worth a retry)."""
        if not nonce or self._nonces.get(_origin(url)) == nonce:
            return False
        self._nonces[_origin(url)] = nonce[:512]
        return True
