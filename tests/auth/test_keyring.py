"""KeyringStore: records sealed on disk, the data key in the (here: in-memory) keychain."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import keyring
import keyring.backend
import pytest
from keyring.errors import KeyringError

from mrtr import AuthError
from mrtr.auth import KeyringStore

pytestmark = pytest.mark.anyio


class MemoryKeyring(keyring.backend.KeyringBackend):
    priority = 1  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.secrets: dict[tuple[str, str], str] = {}
        self.broken = False

    def get_password(self, service: str, username: str) -> str | None:
        if self.broken:
            raise KeyringError("no backend")
        return self.secrets.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.secrets[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        self.secrets.pop((service, username), None)


@pytest.fixture
def chain() -> Iterator[MemoryKeyring]:
    previous = keyring.get_keyring()
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    try:
        yield backend
    finally:
        keyring.set_keyring(previous)


async def test_records_are_sealed_and_survive_a_new_store(
    chain: MemoryKeyring, tmp_path: Path
) -> None:
    path = tmp_path / "tokens.enc.json"
    store = KeyringStore(path)
    record = {"access_token": "at-very-secret", "refresh_token": "rt-very-secret"}
    await store.save("tokens", "issuer|resource", record)
    assert "very-secret" not in path.read_text()
    assert len(chain.secrets) == 1  # only the data key sits in the keychain
    assert await KeyringStore(path).load("tokens", "issuer|resource") == record
    assert await store.load("tokens", "other") is None
    await store.delete("tokens", "issuer|resource")
    assert await store.load("tokens", "issuer|resource") is None


async def test_a_moved_or_tampered_record_is_not_trusted(
    chain: MemoryKeyring, tmp_path: Path
) -> None:
    path = tmp_path / "tokens.enc.json"
    store = KeyringStore(path)
    await store.save("tokens", "a", {"access_token": "x"})
    data = json.loads(path.read_text())
    data["records"]["tokens"]["b"] = data["records"]["tokens"]["a"]  # bound to its key
    path.write_text(json.dumps(data))
    assert await KeyringStore(path).load("tokens", "b") is None
    chain.secrets.clear()  # the keychain lost the key: the records are unreadable
    assert await KeyringStore(path).load("tokens", "a") is None


async def test_an_unavailable_keychain_is_an_auth_error(
    chain: MemoryKeyring, tmp_path: Path
) -> None:
    chain.broken = True
    with pytest.raises(AuthError, match="keychain"):
        await KeyringStore(tmp_path / "t.json").save("tokens", "a", {})
