"""`KeyringStore`: records encrypted on disk under a key kept in the OS keychain.

Keychains cap the size of a secret (2,560 bytes on Windows), so only a random data key
lives there; the records sit in a `FileStore` file, each sealed with AES-256-GCM and
bound to its kind and key. Needs ``pip install 'mrtr[keyring]'`` (``keyring`` and
``cryptography``); keychain calls run in a worker thread.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
from contextlib import AbstractAsyncContextManager
from typing import Any

import anyio

from mrtr._lazy import publish
from mrtr.auth._stores import FileStore
from mrtr.errors import AuthError

__all__ = ["KeyringStore"]


class KeyringStore:
    """Tokens encrypted in a file, their key in the OS keychain (macOS, Windows, Secret Service).

    Args:
        path: the encrypted records file (``0600``, shared safely between processes).
        service: the keychain service name the data key is stored under.
        username: the keychain entry name.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        service: str = "mrtr",
        username: str = "token-store-key",
    ) -> None:
        self.service = service
        self.username = username
        self._file = FileStore(path)
        self._aead: Any = None

    async def load(self, kind: str, key: str) -> dict[str, Any] | None:
        """The record, or ``None`` (also for one sealed under another key: forgotten).

        Raises:
            AuthError: the keychain is unavailable.
        """
        sealed = await self._file.load(kind, key)
        if sealed is None:
            return None
        aead = await self._cipher()
        try:
            nonce = base64.b64decode(sealed["nonce"])
            plain = aead.decrypt(nonce, base64.b64decode(sealed["data"]), f"{kind}|{key}".encode())
        except Exception:  # tampered, or sealed under a key the keychain no longer has
            return None
        value = json.loads(plain)
        return value if isinstance(value, dict) else None

    async def save(self, kind: str, key: str, value: dict[str, Any]) -> None:
        """Seal and store (replace) a record."""
        aead = await self._cipher()
        nonce = secrets.token_bytes(12)
        data = aead.encrypt(nonce, json.dumps(value).encode(), f"{kind}|{key}".encode())
        sealed = {
            "nonce": base64.b64encode(nonce).decode(),
            "data": base64.b64encode(data).decode(),
        }
        await self._file.save(kind, key, sealed)

    async def delete(self, kind: str, key: str) -> None:
        """Remove a record if present."""
        await self._file.delete(kind, key)

    def lock(self, key: str) -> AbstractAsyncContextManager[None]:
        """Hold the refresh lock for ``key``, against this and every other process."""
        return self._file.lock(key)

    async def _cipher(self) -> Any:
        if self._aead is None:
            secret = await anyio.to_thread.run_sync(self._data_key)
            try:
                from cryptography.hazmat.primitives.ciphers.aead import AESGCM
            except ImportError as exc:  # pragma: no cover - depends on the environment
                raise ImportError(
                    "KeyringStore needs cryptography: pip install 'mrtr[keyring]'"
                ) from exc

            self._aead = AESGCM(secret)
        return self._aead

    def _data_key(self) -> bytes:
        try:
            import keyring
            from keyring.errors import KeyringError
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError("KeyringStore needs keyring: pip install 'mrtr[keyring]'") from exc
        try:
            stored = keyring.get_password(self.service, self.username)
            if stored is None:
                stored = base64.b64encode(secrets.token_bytes(32)).decode()
                keyring.set_password(self.service, self.username, stored)
        except KeyringError as exc:
            raise AuthError(
                f"the OS keychain is unavailable ({type(exc).__name__}); use FileStore"
            ) from exc
        return base64.b64decode(stored)


publish("mrtr.auth", KeyringStore)
