"""The inspector costs nothing when unused: importing mrtr, or calling with it, loads none of it.

(The CPU side is `python -m bench.inspect_cost`; this is the cheap, deterministic half.)
"""

from __future__ import annotations

import subprocess
import sys

import pytest

_LIST = "print(','.join(sorted(m for m in sys.modules if m.startswith('mrtr'))))"

A_CALL = """
import anyio
from mrtr import Client
from mrtr.server import MCPServer

app = MCPServer("plain")

@app.tool()
def echo(text: str) -> str:
    return text

async def main():
    async with Client(app) as client:
        assert (await client.call_tool("echo", {"text": "hi"})).content[0].text == "hi"

anyio.run(main)
"""


def _loaded_after(statement: str) -> list[str]:
    code = f"import sys\n{statement}\n{_LIST}"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    return done.stdout.strip().split(",")


@pytest.mark.parametrize(
    "statement",
    ["import mrtr", "import mrtr.client", "from mrtr import Client", "import mrtr.server", A_CALL],
    ids=["mrtr", "mrtr.client", "Client", "mrtr.server", "a call"],
)
def test_nothing_of_the_inspector_is_imported(statement: str) -> None:
    loaded = _loaded_after(statement)
    assert "mrtr" in loaded  # the probe ran this tree's mrtr
    assert [m for m in loaded if m.startswith("mrtr.inspect")] == []


def test_the_command_line_loads_only_the_inspectors_flags() -> None:
    # `mrtr --help` builds every subcommand's parser, `inspect`'s too: its flags only
    loaded = _loaded_after("from mrtr.cli._args import build_parser\nbuild_parser()")
    assert [m for m in loaded if m.startswith("mrtr.inspect")] == [
        "mrtr.inspect",
        "mrtr.inspect._cli",
    ]
