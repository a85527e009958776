"""Porting from the official SDK is a rename: its documented client example, imports changed.

The official SDK's README shows a ten-line client: connect to a server URL, call the
``add`` tool with ``{"a": 1, "b": 2}``, read ``structured_content``. Below, that example
is written once as text and run twice, once with the official ``Client`` and once with
ours; only the import line differs. The stdio form passes the official SDK's own
``StdioServerParameters`` to our ``Client``.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from tests.helpers.official import ROOT, peer_command

pytestmark = [pytest.mark.anyio, pytest.mark.interop]

BOUND = 90

EXAMPLE = """
{imports}


async def main(target):
    async with Client(target) as client:
        result = await client.call_tool("add", {{"a": 1, "b": 2}})
        return result.structured_content
"""

OFFICIAL = "from mcp import Client"
OURS = "from mrtr import Client"


async def run_example(imports: str, target: Any) -> Any:
    namespace: dict[str, Any] = {}
    exec(EXAMPLE.format(imports=imports), namespace)  # the same text for both clients
    with anyio.fail_after(BOUND):
        return await namespace["main"](target)


@pytest.mark.parametrize("imports", [OFFICIAL, OURS], ids=["official", "mrtr"])
async def test_the_documented_http_example_runs_with_only_the_imports_changed(
    official_http: str, imports: str
) -> None:
    assert await run_example(imports, f"{official_http}/changes/mcp") == {"result": 3}


async def test_the_official_stdio_parameters_work_with_our_client() -> None:
    from mcp import StdioServerParameters as OfficialStdioParameters

    command, *args = peer_command("stdio", "--server", "changes")
    params = OfficialStdioParameters(command=command, args=args, cwd=str(ROOT))
    assert await run_example(OURS, params) == {"result": 3}
