"""A request with a million wrong items costs about what it weighs, and says so briefly."""

from __future__ import annotations

import json
import tracemalloc
from typing import Any

import pytest

from mrtr.server import MCPServer

from ._drive import Wire, text_of

pytestmark = pytest.mark.anyio

MiB = 1 << 20


def totals() -> MCPServer:
    app = MCPServer("totals")

    @app.tool()
    def total(items: list[int]) -> int:
        return sum(items)

    return app


async def peak_of(wire: Wire, *args: Any, **kwargs: Any) -> tuple[dict[str, Any], int]:
    """The response to one call and the memory its handling peaked at (traced)."""
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        response = await wire.call(*args, **kwargs)
        return response, tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


async def test_wrong_arguments_are_described_by_the_first_few() -> None:
    wire = Wire(totals())
    await wire.result("total", {"items": [1]})  # warm: imports and caches are not the call's
    response, peak = await peak_of(wire, "total", {"items": ["a"] * 100_000})
    message = text_of(response["result"])
    assert message.startswith("Error executing tool total: items.0: Input should be")
    assert message.endswith("(and 99990 more)") and message.count("items.") == 10
    assert len(json.dumps(response)) < 4096  # it was 8 MB: every error, twice over
    assert peak < 30 * MiB  # 72 MiB when every error became an object


async def test_wrong_input_responses_are_refused_by_the_first() -> None:
    wire = Wire(totals())
    await wire.result("total", {"items": [1]})
    responses = {f"k{i}": {"action": 5} for i in range(30_000)}
    response, peak = await peak_of(wire, "total", {"items": [1]}, responses=responses)
    error = response["error"]
    assert error["code"] == -32602 and "inputResponses.k0" in error["message"]
    assert peak < 15 * MiB  # 39 MiB when every error was listed (twice, with its input)


async def test_an_unknown_name_is_echoed_cut() -> None:
    wire = Wire(totals())
    huge = "n" * 1_000_000
    tool = await wire.result("total" + huge)
    assert tool["isError"] is True
    assert text_of(tool).startswith("Unknown tool: totalnnn") and len(text_of(tool)) < 200
    prompt = await wire.send("prompts/get", {"name": huge})
    message = prompt["error"]["message"]
    assert message.startswith("Unknown prompt: nnn") and len(message) < 200
