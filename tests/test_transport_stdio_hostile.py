"""The stdio client against hostile servers: unusual lines, stray children, a full stderr."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

from mrtr import Client, StdioServerParameters
from mrtr.errors import MRTRError

pytestmark = pytest.mark.anyio

HELPERS = Path(__file__).parent / "helpers"
BOUND = 60  # generous: a slow shared machine starts Python subprocesses slowly


async def test_one_unusual_message_fails_at_most_its_own_request_over_stdio() -> None:
    params = StdioServerParameters(sys.executable, [str(HELPERS / "hostile_stdio_server.py")])
    # a line that cannot be parsed cannot be matched to its request: it is dropped and
    # logged, and that request times out; every other request is unaffected
    async with Client(params, read_timeout_seconds=5) as client:
        with anyio.fail_after(BOUND):
            tools = await client.list_tools()  # a valid schema nested 600 deep
            assert [tool.name for tool in tools.tools] == ["deep"]
            for name in ("bigint", "deep"):
                with pytest.raises(MRTRError):
                    await client.call_tool(name, {})
                result = await client.call_tool("plain", {})
                assert result.content[0].text == "called plain"  # type: ignore[union-attr]
