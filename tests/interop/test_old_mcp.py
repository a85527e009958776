"""mode="auto" against a real server on mcp 1.8.1, which cannot read server/discover.

Opt-in: ``nox -s interop_old_mcp`` builds the environment with the old SDK and names its
interpreter in ``MRTR_OLD_MCP_PYTHON``; the other sessions deselect the ``old_mcp``
marker. Such a server neither answers the probe nor fails at once: its reader dies on
the probe, and the process exits at the next message. The client must still connect.
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from mrtr import Client, StdioServerParameters

pytestmark = [pytest.mark.anyio, pytest.mark.old_mcp]

SERVER = str(Path(__file__).parent / "old_mcp" / "server.py")


def old_python() -> str:
    python = os.environ.get("MRTR_OLD_MCP_PYTHON")
    assert python, "run this through `nox -s interop_old_mcp`, which sets MRTR_OLD_MCP_PYTHON"
    return python


async def test_auto_mode_connects_to_an_mcp_1_8_server_in_the_legacy_era() -> None:
    params = StdioServerParameters(old_python(), [SERVER])
    with anyio.fail_after(90):
        async with Client(params, probe_timeout=5, read_timeout_seconds=30) as client:
            assert client.protocol_version in ("2025-03-26", "2024-11-05")
            assert client.server_info is not None and client.server_info.name == "old-mcp"
            result = await client.call_tool("add", {"a": 2, "b": 3}, 30.0)
            assert [block.model_dump()["text"] for block in result.content] == ["5"]


async def test_legacy_mode_needs_no_probe() -> None:
    params = StdioServerParameters(old_python(), [SERVER])
    with anyio.fail_after(60):
        async with Client(params, mode="legacy", read_timeout_seconds=30) as client:
            assert (await client.list_tools()).tools[0].name == "add"
