"""Compact JWS signing for client assertions (RFC 7523), over ``cryptography``.

mrtr only signs, never verifies. ``cryptography`` is imported on first use: install it
with ``pip install 'mrtr[auth]'``.
"""

from __future__ import annotations

import base64
import json
import secrets
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from mrtr._lazy import publish

__all__ = ["SigningKey", "client_assertion"]

_ALGORITHMS = ("ES256", "ES384", "ES512", "RS256", "PS256", "EdDSA")


def b64url(data: bytes) -> str:
    """Base64url without padding."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


@dataclass(frozen=True)
class SigningKey:
    """A private key that signs JWTs.

    Attributes:
        pem: the PEM private key (PKCS#8 or traditional).
        algorithm: ``ES256`` (default), ``ES384``, ``ES512``, ``RS256``, ``PS256`` or ``EdDSA``.
        key_id: the ``kid`` header, if the server wants one.
    """

    pem: str | bytes = field(repr=False)
    algorithm: str = "ES256"
    key_id: str | None = None

    def __post_init__(self) -> None:
        if self.algorithm not in _ALGORITHMS:
            raise ValueError(f"algorithm must be one of {', '.join(_ALGORITHMS)}")

    def sign(self, claims: dict[str, Any], headers: dict[str, Any] | None = None) -> str:
        """A compact JWS of ``claims``.

        Raises:
            ImportError: ``cryptography`` is not installed (``mrtr[auth]``).
            ValueError: the key does not fit the algorithm.
        """
        header: dict[str, Any] = {"alg": self.algorithm, "typ": "JWT", **(headers or {})}
        if self.key_id:
            header["kid"] = self.key_id
        signing_input = ".".join(
            b64url(json.dumps(part, separators=(",", ":")).encode()) for part in (header, claims)
        ).encode("ascii")
        return signing_input.decode("ascii") + "." + b64url(self._signature(signing_input))

    @cached_property
    def private_key(self) -> Any:
        """The loaded ``cryptography`` private key (loaded once)."""
        serialization = _crypto().serialization
        pem = self.pem.encode() if isinstance(self.pem, str) else self.pem
        return serialization.load_pem_private_key(pem, password=None)

    def public_jwk(self) -> dict[str, str]:
        """The public key as a JWK (EC P-256 only: what DPoP proofs carry)."""
        numbers = self.private_key.public_key().public_numbers()
        size = 32
        return {
            "kty": "EC",
            "crv": "P-256",
            "x": b64url(numbers.x.to_bytes(size, "big")),
            "y": b64url(numbers.y.to_bytes(size, "big")),
        }

    def _signature(self, data: bytes) -> bytes:
        crypto = _crypto()
        hashes, ec, ed25519 = crypto.hashes, crypto.ec, crypto.ed25519
        padding, rsa = crypto.padding, crypto.rsa
        decode_dss_signature = crypto.decode_dss_signature
        key = self.private_key
        alg = self.algorithm
        if alg.startswith("ES") and isinstance(key, ec.EllipticCurvePrivateKey):
            digest = {"ES256": hashes.SHA256(), "ES384": hashes.SHA384()}.get(alg, hashes.SHA512())
            r, s = decode_dss_signature(key.sign(data, ec.ECDSA(digest)))
            size = (key.curve.key_size + 7) // 8
            return r.to_bytes(size, "big") + s.to_bytes(size, "big")
        if alg == "RS256" and isinstance(key, rsa.RSAPrivateKey):
            signed: bytes = key.sign(data, padding.PKCS1v15(), hashes.SHA256())
            return signed
        if alg == "PS256" and isinstance(key, rsa.RSAPrivateKey):
            pss = padding.PSS(mgf=padding.MGF1(hashes.SHA256()), salt_length=32)
            signed = key.sign(data, pss, hashes.SHA256())
            return signed
        if alg == "EdDSA" and isinstance(key, ed25519.Ed25519PrivateKey):
            signed = key.sign(data)
            return signed
        raise ValueError(f"the signing key does not fit algorithm {alg}")


def client_assertion(key: SigningKey, *, client_id: str, audience: str, now: float) -> str:
    """A ``private_key_jwt`` client assertion (RFC 7523 section 2.2): fresh ``jti``."""
    claims = {
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "iat": int(now),
        "exp": int(now) + 300,
        "jti": secrets.token_urlsafe(16),
    }
    return key.sign(claims)


class _Crypto:
    """The ``cryptography`` modules, imported on first use."""

    def __init__(self) -> None:
        try:
            from cryptography.hazmat.primitives import hashes, serialization
            from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
            from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError("signing JWTs needs cryptography: pip install 'mrtr[auth]'") from exc
        self.hashes, self.serialization = hashes, serialization
        self.ec, self.ed25519, self.padding, self.rsa = ec, ed25519, padding, rsa
        self.decode_dss_signature = decode_dss_signature


_CRYPTO: list[_Crypto] = []


def _crypto() -> _Crypto:
    if not _CRYPTO:
        _CRYPTO.append(_Crypto())
    return _CRYPTO[0]


def generate_ec_pem() -> str:
    """A new EC P-256 private key, PKCS#8 PEM (for DPoP)."""
    crypto = _crypto()
    key = crypto.ec.generate_private_key(crypto.ec.SECP256R1())
    pem: bytes = key.private_bytes(
        crypto.serialization.Encoding.PEM,
        crypto.serialization.PrivateFormat.PKCS8,
        crypto.serialization.NoEncryption(),
    )
    return pem.decode("ascii")


publish("mrtr.auth", SigningKey)
