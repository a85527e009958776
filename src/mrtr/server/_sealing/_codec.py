"""Request-state codecs: the cryptographic layer under `RequestStateSecurity`.

A codec turns the policy's claims envelope (bytes) into an opaque URL-safe token and
back. It only has to provide integrity (and, ideally, confidentiality): expiry, request,
principal and audience binding are enforced by the policy around any codec.

The built-in `AESGCMCodec` tokens look like ``m1.<base64url(kid | nonce | ciphertext+tag)>``:

- ``m1.`` is the format version. It is fed to AES-GCM as associated data together with
  the key id, so a token cannot be re-labelled into another format or ring slot.
- ``kid`` (4 bytes) names the key: ``HMAC-SHA256(secret, "mrtr/request-state/kid")``
  truncated. It is a one-way fingerprint of the secret, so publishing it reveals nothing,
  and it gives an O(1) ring lookup. Trial decryption (try every key) was rejected: it
  costs one AES-GCM attempt per ring key for every forged token, and it cannot tell
  "unknown key" from "tampered" in the server log.
- the AES-256 key is ``HMAC-SHA256(secret, "mrtr/request-state/aes-256-gcm")`` (a PRF
  over an operator secret of at least 32 bytes: HKDF-Expand in a single block), so any
  secret format (hex, random bytes, a passphrase-length string) yields a proper key.
- base64url without padding, and only the canonical encoding verifies: the decoded bytes
  are re-encoded and compared, so no two strings open to the same token.
"""

from __future__ import annotations

import binascii
import hashlib
import hmac
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from mrtr._lazy import publish
from mrtr.errors import InvalidRequestState

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

__all__ = [
    "MIN_KEY_SIZE",
    "AESGCMCodec",
    "AESGCMRequestStateCodec",
    "RequestStateCodec",
    "b64url",
    "b64url_decode",
]

MIN_KEY_SIZE = 32
"""The shortest secret the built-in codec accepts, in bytes."""

_PREFIX = "m1."
_PREFIX_BYTES = _PREFIX.encode("ascii")
_KID_LABEL = b"mrtr/request-state/kid"
_ENC_LABEL = b"mrtr/request-state/aes-256-gcm"
_KID_SIZE = 4
_NONCE_SIZE = 12
_TAG_SIZE = 16


@runtime_checkable
class RequestStateCodec(Protocol):
    """Authenticated encryption of the request-state envelope.

    Contract: ``unseal(seal(payload)) == payload``; `unseal` raises `InvalidRequestState`
    for any token it did not mint unmodified (any other exception is also treated as a
    rejection, and logged as a codec bug). Tokens should carry a format-version prefix
    bound under the authentication tag, and never name their algorithm. Both methods are
    synchronous: unwrap key material once (for example from a KMS) and keep it.
    """

    def seal(self, payload: bytes) -> str:
        """Return an opaque, URL-safe token protecting ``payload``."""
        ...

    def unseal(self, token: str) -> bytes:
        """Return the payload sealed in ``token``.

        Raises:
            InvalidRequestState: the token is malformed, forged, or under an unknown key.
        """
        ...


# `base64.urlsafe_b64encode` and `urlsafe_b64decode` are the same `binascii` calls and
# translations behind two Python frames each; three codings per sealed leg call them here
_TO_URLSAFE = bytes.maketrans(b"+/", b"-_")
_FROM_URLSAFE = bytes.maketrans(b"-_", b"+/")


def b64url(data: bytes) -> str:
    """Base64url without padding."""
    return (
        binascii.b2a_base64(data, newline=False).translate(_TO_URLSAFE).rstrip(b"=").decode("ascii")
    )


def b64url_decode(text: str) -> bytes:
    """Decode canonical unpadded base64url only.

    Raises:
        ValueError: the text is not the exact string `b64url` would produce.
    """
    if not text.isascii():
        raise ValueError("non-ASCII base64url")
    padded = (text + "=" * (-len(text) % 4)).encode("ascii")
    raw = binascii.a2b_base64(padded.translate(_FROM_URLSAFE))  # binascii.Error: ValueError
    if b64url(raw) != text:
        raise ValueError("non-canonical base64url")
    return raw


def _secret_bytes(index: int, key: object) -> bytes:
    if isinstance(key, str):
        secret = key.encode("utf-8")
    elif isinstance(key, (bytes, bytearray)):
        secret = bytes(key)
    else:
        # never coerce: bytes(32) would silently be an all-zero key
        raise TypeError(
            f"request-state keys must be bytes or str; keys[{index}] is a {type(key).__name__}"
        )
    if len(secret) < MIN_KEY_SIZE:
        raise ValueError(
            f"request-state keys must be at least {MIN_KEY_SIZE} bytes of secret randomness; "
            f"keys[{index}] is {len(secret)} bytes (make one with "
            '`python -c "import secrets; print(secrets.token_hex(32))"`)'
        )
    return secret


class AESGCMCodec:
    """The built-in codec: AES-256-GCM under a ring of keys.

    ``keys[0]`` seals; every key unseals, which is what makes rotation possible (see
    `RequestStateSecurity`). The ``cryptography`` package is imported on the first seal or
    unseal, not at construction.

    Args:
        keys: one or more secrets, each at least 32 bytes (``str`` is UTF-8 encoded).

    Raises:
        ValueError: no key, a key shorter than 32 bytes, or two keys that are the same.
        TypeError: a key is neither bytes nor str.
    """

    def __init__(self, keys: Sequence[bytes | bytearray | str]) -> None:
        if isinstance(keys, (bytes, bytearray, str)):
            raise TypeError("keys must be a sequence of keys, e.g. keys=[secret]")
        secrets = [_secret_bytes(i, key) for i, key in enumerate(keys)]
        if not secrets:
            raise ValueError("AESGCMCodec needs at least one key")
        self._keys: dict[bytes, bytes] = {}
        for i, secret in enumerate(secrets):
            kid = hmac.new(secret, _KID_LABEL, hashlib.sha256).digest()[:_KID_SIZE]
            if kid in self._keys:
                raise ValueError(f"keys[{i}] repeats an earlier key")
            self._keys[kid] = hmac.new(secret, _ENC_LABEL, hashlib.sha256).digest()
        self._sealing_kid = next(iter(self._keys))
        self._aeads: dict[bytes, AESGCM] | None = None

    def _ring(self) -> dict[bytes, AESGCM]:
        if self._aeads is None:
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM

            self._aeads = {kid: AESGCM(key) for kid, key in self._keys.items()}
        return self._aeads

    def seal(self, payload: bytes) -> str:
        """Encrypt ``payload`` under ``keys[0]``."""
        kid = self._sealing_kid
        nonce = os.urandom(_NONCE_SIZE)
        sealed = self._ring()[kid].encrypt(nonce, payload, _PREFIX_BYTES + kid)
        return _PREFIX + b64url(kid + nonce + sealed)

    def unseal(self, token: str) -> bytes:
        """Decrypt a token sealed under any key of the ring.

        Raises:
            InvalidRequestState: malformed, non-canonical, unknown key, or failed tag.
        """
        from cryptography.exceptions import InvalidTag

        if not token.startswith(_PREFIX):
            raise InvalidRequestState("malformed token (unknown format prefix)")
        try:
            raw = b64url_decode(token[len(_PREFIX) :])
        except ValueError as exc:
            raise InvalidRequestState(f"malformed token ({exc})") from None
        if len(raw) < _KID_SIZE + _NONCE_SIZE + _TAG_SIZE:
            raise InvalidRequestState("malformed token (too short)")
        kid = raw[:_KID_SIZE]
        nonce = raw[_KID_SIZE : _KID_SIZE + _NONCE_SIZE]
        aead = self._ring().get(kid)
        if aead is None:
            raise InvalidRequestState("sealed under an unknown key")
        try:
            return aead.decrypt(nonce, raw[_KID_SIZE + _NONCE_SIZE :], _PREFIX_BYTES + kid)
        except InvalidTag:
            raise InvalidRequestState("authentication tag mismatch (tampered)") from None


AESGCMRequestStateCodec = AESGCMCodec
"""The official SDK's name for the built-in codec (porting is a rename)."""

publish("mrtr.server", AESGCMCodec, RequestStateCodec)
