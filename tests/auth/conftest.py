from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class MockAS:
    """The mock authorization server (plus protected MCP server) in a subprocess."""

    base: str

    @property
    def mcp(self) -> str:
        return f"{self.base}/mcp"

    def stats(self) -> dict[str, int]:
        data: dict[str, int] = httpx.get(f"{self.base}/_stats", timeout=30).json()
        return data

    def control(self, **settings: Any) -> None:
        httpx.post(f"{self.base}/_control", json=settings, timeout=30).raise_for_status()


@pytest.fixture
def mock_as() -> Iterator[MockAS]:
    """A fresh mock authorization server on 127.0.0.1, stopped after the test."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.auth.mock_as"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        base = f"http://127.0.0.1:{port}"
        # the socket listens before the port is printed: this waits for uvicorn, no retry
        httpx.get(f"{base}/_stats", timeout=60).raise_for_status()
        yield MockAS(base)
    finally:
        proc.kill()
        proc.wait(timeout=30)
        if proc.stdout is not None:
            proc.stdout.close()
