"""The MCPServer examples: each serves its flow (in process, over stdio, on both eras)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
import pytest

from mrtr import Client
from mrtr.transports import StdioServerParameters
from mrtr.types import CreateMessageResult, ElicitResult, TextContent, TextResourceContents

pytestmark = pytest.mark.anyio

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # pydantic resolves the models' annotations through it
    spec.loader.exec_module(module)
    return module


def text(content: object) -> str:
    assert isinstance(content, (TextContent, TextResourceContents)), content
    return content.text


async def answer(ctx: Any, params: Any) -> ElicitResult:
    fields = params.requested_schema.get("properties", {})
    if "region" in fields:
        return ElicitResult(action="accept", content={"region": "us-east-1"})
    if "depth" in fields:
        return ElicitResult(action="accept", content={"depth": "short"})
    if params.message.startswith("Who is the briefing"):
        return ElicitResult(action="accept", content={"value": "the board"})
    return ElicitResult(action="accept", content={"value": True})


async def sample(ctx: Any, params: Any) -> CreateMessageResult:
    return CreateMessageResult(
        role="assistant", content=TextContent(type="text", text="faster"), model="m"
    )


async def test_provision_on_both_eras_in_process_and_over_stdio() -> None:
    module = load("mcpserver_provision")
    stdio = StdioServerParameters(
        command=sys.executable, args=[str(EXAMPLES / "mcpserver_provision.py")]
    )
    with anyio.fail_after(60):
        for target in (module.app, stdio):
            for mode in ("auto", "legacy"):
                async with Client(target, mode=mode, elicitation_callback=answer) as client:
                    result = await client.call_tool("provision", {"name": "orders"})
                    assert text(result.content[0]) == "Provisioned 'orders' in us-east-1."
                    skipped = await client.call_tool("provision", {"name": "eu-orders"})
                    assert text(skipped.content[0]) == "Provisioned 'eu-orders' in eu-west-1."


async def test_briefing_prompt_and_notes_template(anyio_backend: str) -> None:
    module = load("mcpserver_briefing")
    with anyio.fail_after(60):
        for mode in ("auto", "legacy"):
            async with Client(module.app, mode=mode, elicitation_callback=answer) as client:
                prompt = await client.get_prompt("briefing", {"topic": "sales"})
                assert (
                    text(prompt.messages[0].content) == "Write a briefing on sales for the board."
                )
                read = await client.read_resource("notes://mrtr")
                assert text(read.contents[0]) == "short notes about mrtr (notes-v1)"


async def test_release_asks_in_the_body(anyio_backend: str) -> None:
    module = load("mcpserver_ask")
    with anyio.fail_after(60):
        for mode in ("auto", "legacy"):
            async with Client(
                module.app, mode=mode, elicitation_callback=answer, sampling_callback=sample
            ) as client:
                result = await client.call_tool("release", {"version": "2.0"})
                assert text(result.content[0]) == "Released 2.0: faster"


def test_the_pytest_example_passes() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "test_mcpserver_provision.py",
        ],
        cwd=EXAMPLES,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 passed" in done.stdout
