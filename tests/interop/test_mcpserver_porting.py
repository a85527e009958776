"""Porting an MCPServer from the official SDK is an import change.

Each scenario of the official documentation for servers that ask (a dependency tool, a
prompt and a resource template in the manual form, shared keys across two instances,
a custom codec) is written below once, as text, in the official SDK's spelling. It runs
twice: with the official imports (``mcp`` 2.3.0, its own ``Client``) and with mrtr's;
only the import block differs, and both runs must give the same answers.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

pytestmark = [pytest.mark.anyio, pytest.mark.interop]

OFFICIAL = """
from mcp import Client
from mcp.server.mcpserver import (
    Context, Elicit, ElicitationResult, InvalidRequestState, MCPServer, RequestStateSecurity,
    Resolve,
)
from mcp.server.mcpserver.prompts.base import UserMessage
from mcp.types import ElicitRequest, ElicitRequestFormParams, ElicitResult, InputRequiredResult
"""

OURS = """
from mrtr import Client
from mrtr.server import (
    Context, Elicit, ElicitationResult, InvalidRequestState, MCPServer, RequestStateSecurity,
    Resolve, UserMessage,
)
from mrtr.types import ElicitRequest, ElicitRequestFormParams, ElicitResult, InputRequiredResult
"""

COMMON = """
import os
from typing import Annotated

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from pydantic import BaseModel


class Region(BaseModel):
    region: str


class Confirm(BaseModel):
    ok: bool


async def answer(context, params):
    fields = params.requested_schema.get("properties", {})
    if "region" in fields:
        return ElicitResult(action="accept", content={"region": "eu-west-1"})
    if "audience" in fields:
        return ElicitResult(action="accept", content={"audience": "the board"})
    return ElicitResult(action="accept", content={"ok": True})


# --- a dependency tool: the SDK builds the InputRequiredResult ------------------------

deps = MCPServer("Provisioner")


async def ask_region(name: str) -> Region | Elicit[Region]:
    return Elicit(f"Which region should {name!r} live in?", Region)


async def ask_confirm(name: str) -> Elicit[Confirm]:
    return Elicit(f"Really provision {name!r}?", Confirm)


@deps.tool()
async def provision(
    name: str,
    region: Annotated[Region, Resolve(ask_region)],
    confirm: Annotated[ElicitationResult[Confirm], Resolve(ask_confirm)],
) -> str:
    if confirm.action != "accept" or not confirm.data.ok:
        return "cancelled"
    return f"{name} provisioned in {region.region}"


# --- a prompt and a template in the manual form ----------------------------------------

manual = MCPServer("Briefing")

ASK_AUDIENCE = ElicitRequest(
    params=ElicitRequestFormParams(
        message="Who is it for?",
        requested_schema={
            "type": "object",
            "properties": {"audience": {"type": "string"}},
            "required": ["audience"],
        },
    )
)


def audience_of(ctx):
    got = (ctx.input_responses or {}).get("audience")
    if isinstance(got, ElicitResult) and got.content is not None:
        return got.content["audience"]
    return None


@manual.prompt()
async def briefing(ctx: Context) -> list[UserMessage] | InputRequiredResult:
    audience = audience_of(ctx)
    if audience is None:
        return InputRequiredResult(input_requests={"audience": ASK_AUDIENCE})
    return [UserMessage(f"Write a briefing for {audience}.")]


@manual.resource("report://{year}")
async def report(year: str, ctx: Context) -> str | InputRequiredResult:
    audience = audience_of(ctx)
    if audience is None:
        return InputRequiredResult(input_requests={"audience": ASK_AUDIENCE}, request_state="r1")
    return f"report {year} for {audience} ({ctx.request_state})"


# --- shared keys: round 1 on one instance, round 2 on another ---------------------------

KEY = bytes(range(32))


def instance():
    fleet = MCPServer("fleet", request_state_security=RequestStateSecurity(keys=[KEY]))
    fleet.tool()(provision)
    return fleet


# --- a custom codec ----------------------------------------------------------------------

PREFIX = "kms1."


class EnvelopeCodec:
    def __init__(self, data_key):
        self._aead = AESGCM(data_key)

    def seal(self, payload):
        nonce = os.urandom(12)
        return PREFIX + (nonce + self._aead.encrypt(nonce, payload, PREFIX.encode())).hex()

    def unseal(self, token):
        if not token.startswith(PREFIX):
            raise InvalidRequestState("unknown token format")
        try:
            raw = bytes.fromhex(token[len(PREFIX):])
            return self._aead.decrypt(raw[:12], raw[12:], PREFIX.encode())
        except (ValueError, InvalidTag) as exc:
            raise InvalidRequestState("token failed verification") from exc


deployer = MCPServer(
    "Deployer", request_state_security=RequestStateSecurity(codec=EnvelopeCodec(os.urandom(32)))
)
deployer.tool()(provision)


async def main():
    out = {}
    async with Client(deps, elicitation_callback=answer) as client:
        out["tool"] = (await client.call_tool("provision", {"name": "orders"})).content[0].text
        tools = (await client.list_tools()).tools
        out["schema"] = sorted(tools[0].input_schema["properties"])
    async with Client(manual, elicitation_callback=answer) as client:
        out["prompt"] = (await client.get_prompt("briefing")).messages[0].content.text
        out["template"] = (await client.read_resource("report://2025")).contents[0].text
    async with (
        Client(instance(), elicitation_callback=answer) as a,
        Client(instance(), elicitation_callback=answer) as b,
    ):
        first = await a.session.call_tool("provision", {"name": "db"}, allow_input_required=True)
        out["keys"] = sorted(first.input_requests)
        answers = {
            "region": ElicitResult(action="accept", content={"region": "us-east-1"}),
            "confirm": ElicitResult(action="accept", content={"ok": True}),
        }
        responses = {
            key: answers["region" if "region" in key else "confirm"]
            for key in first.input_requests
        }
        done = await b.session.call_tool(
            "provision",
            {"name": "db"},
            input_responses=responses,
            request_state=first.request_state,
            allow_input_required=True,
        )
        out["fleet"] = done.content[0].text
    async with Client(deployer, elicitation_callback=answer) as client:
        first = await client.session.call_tool(
            "provision", {"name": "x"}, allow_input_required=True
        )
        out["codec_prefix"] = first.request_state[: len(PREFIX)]
        out["codec"] = (await client.call_tool("provision", {"name": "x"})).content[0].text
    return out
"""


async def run(imports: str) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "tutorial"}
    code = compile(imports + COMMON, "<tutorial>", "exec", dont_inherit=True)
    exec(code, namespace)  # the same text for both SDKs but the imports
    with anyio.fail_after(60):
        result: dict[str, Any] = await namespace["main"]()
    return result


async def test_the_documented_scenarios_run_on_mrtr_after_an_import_change(
    anyio_backend: str,
) -> None:
    official = await run(OFFICIAL)
    ours = await run(OURS)
    # the only difference: mrtr's question keys are the resolver names, not module paths
    assert official.pop("keys") == ["tutorial:ask_confirm", "tutorial:ask_region"]
    assert ours.pop("keys") == ["ask_confirm", "ask_region"]
    assert ours == official
    assert ours == {
        "tool": "orders provisioned in eu-west-1",
        "schema": ["name"],
        "prompt": "Write a briefing for the board.",
        "template": "report 2025 for the board (r1)",
        "fleet": "db provisioned in us-east-1",
        "codec_prefix": "kms1.",
        "codec": "x provisioned in eu-west-1",
    }
