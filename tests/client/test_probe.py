"""mode="auto" never hangs on a server that ignores server/discover."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

from mrtr import Client, EraProbeTimeoutError, StdioServerParameters
from mrtr.transports import create_memory_transport_pair
from tests.helpers.peer import ScriptedPeer

pytestmark = pytest.mark.anyio

OLD_SERVER = str(Path(__file__).parents[1] / "helpers" / "old_stdio_server.py")
PROBE = 5.0  # generous for a loaded machine: the probe also waits for the process to start


def old_server(mode: str, starts: Path | None = None, *extra: str) -> StdioServerParameters:
    env = {"OLD_SERVER_STARTS": str(starts)} if starts is not None else None
    return StdioServerParameters(sys.executable, [OLD_SERVER, mode, *extra], env=env)


async def test_a_server_ignoring_the_probe_is_spoken_to_in_the_legacy_era(tmp_path: Path) -> None:
    starts = tmp_path / "starts"
    with anyio.fail_after(60):
        async with Client(old_server("ignore", starts), probe_timeout=PROBE) as client:
            assert client.protocol_version == "2025-03-26"
            assert [tool.name for tool in (await client.list_tools()).tools] == ["echo"]
            await client.send_ping()
    # the same process answered initialize: it was not restarted
    assert len(starts.read_text().split()) == 1


async def test_a_server_stuck_by_the_probe_is_restarted_for_the_legacy_handshake(
    tmp_path: Path,
) -> None:
    starts = tmp_path / "starts"
    with anyio.fail_after(90):
        async with Client(old_server("stuck", starts), probe_timeout=PROBE) as client:
            assert client.protocol_version == "2025-03-26"
            assert [tool.name for tool in (await client.list_tools()).tools] == ["echo"]
            pid = client.server_info.version if client.server_info else None
    first, second = starts.read_text().split()
    assert pid == second != first  # the fresh process is the one that answered


async def test_a_server_killed_by_the_probe_is_restarted_for_the_legacy_handshake(
    tmp_path: Path,
) -> None:
    starts = tmp_path / "starts"
    with anyio.fail_after(90):
        async with Client(old_server("crash", starts), probe_timeout=PROBE) as client:
            assert client.protocol_version == "2025-03-26"
            assert [tool.name for tool in (await client.list_tools()).tools] == ["echo"]
    assert len(starts.read_text().split()) == 2


async def test_a_server_slow_to_start_still_connects_after_a_restart(tmp_path: Path) -> None:
    # Each start takes longer than the probe and the bounded initialize together: the
    # fresh process's initialize waits as any request does (no read timeout here).
    starts = tmp_path / "starts"
    with anyio.fail_after(90):
        async with Client(old_server("slow", starts, "2.5"), probe_timeout=1.0) as client:
            assert client.protocol_version == "2025-03-26"
            assert [tool.name for tool in (await client.list_tools()).tools] == ["echo"]
    assert len(starts.read_text().split()) == 2


async def test_a_server_answering_nothing_raises_a_typed_error_naming_legacy_mode() -> None:
    with anyio.fail_after(90):
        with pytest.raises(EraProbeTimeoutError, match='mode="legacy"') as info:
            async with Client(old_server("dead"), probe_timeout=1.0, read_timeout_seconds=1.0):
                pytest.fail("connected to a server that answers nothing")
        assert isinstance(info.value, TimeoutError)


async def test_a_silent_in_process_peer_raises_instead_of_hanging() -> None:
    with anyio.fail_after(30):
        client_end, server_end = create_memory_transport_pair()
        peer = ScriptedPeer(server_end)
        async with server_end:
            with pytest.raises(EraProbeTimeoutError, match="probe_timeout"):
                async with Client(client_end, probe_timeout=0.5):
                    pytest.fail("connected to a peer that answers nothing")
            # it was asked for server/discover, then initialize, and answered neither
            await peer.expect_request("server/discover")
            await peer.expect_notification("notifications/cancelled")
            await peer.expect_request("initialize")


def test_probe_timeout_must_be_positive() -> None:
    with pytest.raises(ValueError):
        Client("http://127.0.0.1:1/mcp", probe_timeout=0)
