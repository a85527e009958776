"""The server examples: each one serves a full flow (in process, and one over stdio)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
import pytest

from mrtr import Client, MCPError
from mrtr.types import ElicitResult, TextContent, TextResourceContents

pytestmark = pytest.mark.anyio

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def text(content: object) -> str:
    assert isinstance(content, (TextContent, TextResourceContents)), content
    return content.text


async def answer(ctx: Any, params: Any) -> ElicitResult:
    properties = params.requested_schema.get("properties", {})
    if "region" in properties:
        return ElicitResult(action="accept", content={"region": "eu-west-1"})
    if "audience" in properties:
        return ElicitResult(action="accept", content={"audience": "the board"})
    if "confirm" in properties:
        return ElicitResult(action="accept", content={"confirm": True})
    return ElicitResult(action="accept", content={"ok": True})


async def test_provision_in_process_and_over_stdio() -> None:
    from mrtr.transports import StdioServerParameters

    module = load("server_provision")
    with anyio.fail_after(60):
        async with Client(module.server, elicitation_callback=answer) as client:
            result = await client.call_tool("provision", {"name": "orders"})
            assert text(result.content[0]) == "Provisioned 'orders' in eu-west-1."
        params = StdioServerParameters(
            command=sys.executable, args=[str(EXAMPLES / "server_provision.py")]
        )
        async with Client(params, elicitation_callback=answer) as client:
            result = await client.call_tool("provision", {"name": "orders"})
            assert text(result.content[0]) == "Provisioned 'orders' in eu-west-1."
        async with Client(module.server, mode="legacy", elicitation_callback=answer) as client:
            result = await client.call_tool("provision", {"name": "orders"})
            assert result.is_error


async def test_prompt_and_template() -> None:
    module = load("server_prompt_and_template")
    with anyio.fail_after(60):
        async with Client(module.server, elicitation_callback=answer) as client:
            prompt = await client.get_prompt("briefing")
            assert text(prompt.messages[0].content) == "Write a briefing for the board."
            contents = await client.read_resource("notes://mrtr")
            assert text(contents.contents[0]) == "notes about notes://mrtr"


async def test_shared_keys_between_two_instances(monkeypatch: pytest.MonkeyPatch) -> None:
    module = load("server_shared_keys")
    keys = [b"x" * 32]
    one, two = module.build(keys).connection(), module.build(keys).connection()

    def leg(state: str | None) -> dict[str, Any]:
        params: dict[str, Any] = {
            "name": "countdown",
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        }
        if state is not None:
            params["requestState"] = state
        return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}

    async def emit(message: dict[str, Any]) -> None:
        raise AssertionError(message)

    first = await one.handle(leg(None), emit=emit)
    second = await two.handle(leg(first["result"]["requestState"]), emit=emit)  # type: ignore[index]
    third = await one.handle(leg(second["result"]["requestState"]), emit=emit)  # type: ignore[index]
    assert third["result"]["content"][0]["text"] == "done after 2 rounds"  # type: ignore[index]
    stranger = module.build([b"y" * 32]).connection()
    rejected = await stranger.handle(leg(first["result"]["requestState"]), emit=emit)  # type: ignore[index]
    assert rejected["error"]["message"] == "Invalid or expired requestState"  # type: ignore[index]
    monkeypatch.delenv("MRTR_STATE_KEYS", raising=False)
    with pytest.raises(SystemExit):
        module.load_keys()
    monkeypatch.setenv("MRTR_STATE_KEYS", f"{'ab' * 32}, {'cd' * 32}")
    assert module.load_keys() == [b"\xab" * 32, b"\xcd" * 32]


async def test_custom_codec() -> None:
    module = load("server_custom_codec")
    codec = module.EnvelopeCodec(b"d" * 32)
    token = codec.seal(b"payload")
    assert token.startswith("kms1.") and codec.unseal(token) == b"payload"
    from mrtr.server import InvalidRequestState

    for bad in (
        "v1.00",
        token.upper(),
        token[:-2],
        token[:-2] + ("00" if token[-2:] != "00" else "11"),
    ):
        with pytest.raises(InvalidRequestState):
            codec.unseal(bad)
    with anyio.fail_after(60):
        async with Client(module.server, elicitation_callback=answer) as client:
            result = await client.call_tool("deploy", {})
            assert text(result.content[0]) == "deploy:prod: deployed"
            with pytest.raises(MCPError) as info:
                await client.session.call_tool(
                    "deploy",
                    {},
                    request_state="kms1.00",
                    input_responses={"confirm": ElicitResult(action="cancel")},
                )
            assert info.value.message == "Invalid or expired requestState"


async def test_talking_back_notifies_listeners_on_both_eras() -> None:
    from mrtr import ResourcesListChanged, ResourceUpdated

    module = load("server_talking_back")
    with anyio.fail_after(60):
        async with (
            Client(module.server, elicitation_callback=answer) as client,
            client.listen(
                resources_list_changed=True, resource_subscriptions=["notes://all"]
            ) as sub,
        ):
            result = await client.call_tool("add_note", {"text": "buy milk"})
            assert text(result.content[0]) == "Written as notes://1."
            seen = set()
            async for event in sub:
                seen.add(event)
                if len(seen) == 2:
                    break
            assert seen == {ResourcesListChanged(), ResourceUpdated("notes://all")}
        updated = anyio.Event()

        async def on_change(event: object) -> None:
            if event == ResourceUpdated("notes://all"):
                updated.set()

        async with Client(
            module.server, mode="legacy", elicitation_callback=answer, change_callback=on_change
        ) as legacy:
            await legacy.subscribe_resource("notes://all")
            result = await legacy.call_tool("add_note", {"text": "call mum"})  # ctx.elicit
            assert text(result.content[0]) == "Written as notes://2."
            await updated.wait()
            contents = await legacy.read_resource("notes://all")
            assert text(contents.contents[0]) == "buy milk\ncall mum"
