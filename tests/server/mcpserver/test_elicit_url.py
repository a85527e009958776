"""URL-mode elicitation from a resolver, ``ctx.ask`` and ``ctx.elicit_url``, on both eras."""

from __future__ import annotations

import logging
from typing import Annotated, Any

import anyio
import pytest

from mrtr import Client
from mrtr.server import (
    Context,
    ElicitationResult,
    ElicitUrl,
    InvalidSignature,
    MCPServer,
    RequestStateSecurity,
    Resolve,
    Sample,
)
from mrtr.types import ElicitRequestURLParams, ElicitResult
from tests.server.mcpserver._drive import Wire, text_of

pytestmark = pytest.mark.anyio

URL_CAPS: dict[str, Any] = {"elicitation": {"url": {}}}
FLOWS: dict[str, str] = {}  # the server's own record of the out-of-band flows


def build() -> MCPServer:
    app = MCPServer("acme")

    async def sign_in(account: str) -> ElicitUrl:
        return ElicitUrl(f"Sign in to Acme as {account}", f"https://acme.example/login/{account}")

    @app.tool()
    async def connect(
        account: str, went: Annotated[ElicitationResult[None], Resolve(sign_in)]
    ) -> str:
        if went.action != "accept":
            return f"not connected ({went.action})"
        return f"connected {account}: {FLOWS.get(account, 'pending')}"

    @app.tool()
    async def strict(account: str, went: Annotated[None, Resolve(sign_in)]) -> str:
        return "went"

    @app.tool()
    async def pay(ctx: Context, amount: int) -> str:
        went = await ctx.elicit_url(f"Pay {amount} EUR", "https://pay.example/c/1", "pay-1")
        return f"payment {went.action}"

    return app


async def test_a_resolver_asks_a_url_question_in_one_round() -> None:
    wire = Wire(build(), caps=URL_CAPS)
    first = await wire.result("connect", {"account": "ada"})
    (key,) = first["inputRequests"]
    asked = first["inputRequests"][key]
    assert key == "sign_in"
    assert asked == {
        "method": "elicitation/create",
        "params": {
            "mode": "url",
            "message": "Sign in to Acme as ada",
            "url": "https://acme.example/login/ada",
        },
    }  # no elicitationId on 2026-07-28: the state correlates the answer
    FLOWS["ada"] = "token-1"
    done = await wire.result(
        "connect",
        {"account": "ada"},
        responses={"sign_in": {"action": "accept"}},
        state=first["requestState"],
    )
    assert text_of(done) == "connected ada: token-1"
    declined = await wire.result(
        "connect",
        {"account": "ada"},
        responses={"sign_in": {"action": "decline"}},
        state=first["requestState"],
    )
    assert text_of(declined) == "not connected (decline)"
    strict = await wire.result("strict", {"account": "ada"})
    refused = await wire.result(
        "strict",
        {"account": "ada"},
        responses={"sign_in": {"action": "cancel"}},
        state=strict["requestState"],
    )
    assert refused["isError"] is True
    assert "could not resolve: elicitation was cancel" in text_of(refused)


def redeployable(url: str, key: bytes) -> MCPServer:
    app = MCPServer("acme", request_state_security=RequestStateSecurity(keys=[key]))

    async def sign_in(account: str) -> ElicitUrl:
        return ElicitUrl(f"Sign in to Acme as {account}", url)

    @app.tool()
    async def connect(
        account: str, went: Annotated[ElicitationResult[None], Resolve(sign_in)]
    ) -> str:
        return f"connected ({went.action})"

    return app


async def test_an_answer_is_pinned_to_the_url(caplog: pytest.LogCaptureFixture) -> None:
    key = b"k" * 32
    first = await Wire(redeployable("https://acme.example/v1", key), caps=URL_CAPS).result(
        "connect", {"account": "ada"}
    )
    moved = Wire(redeployable("https://acme.example/v2", key), caps=URL_CAPS)
    with caplog.at_level(logging.WARNING, logger="mrtr.server.mcpserver"):
        again = await moved.result(
            "connect",
            {"account": "ada"},
            responses={"sign_in": {"action": "accept"}},
            state=first["requestState"],
        )
    # the user agreed to go to v1: the v2 URL is asked again
    assert again["inputRequests"]["sign_in"]["params"]["url"] == "https://acme.example/v2"
    assert "(url differs)" in caplog.text
    same = Wire(redeployable("https://acme.example/v1", key), caps=URL_CAPS)
    done = await same.result(
        "connect",
        {"account": "ada"},
        responses={"sign_in": {"action": "accept"}},
        state=first["requestState"],
    )
    assert text_of(done) == "connected (accept)"


async def test_ctx_elicit_url_asks_replay_style_on_2026() -> None:
    wire = Wire(build(), caps=URL_CAPS)
    first = await wire.result("pay", {"amount": 5})
    assert list(first["inputRequests"]) == ["pay-1"]
    assert first["inputRequests"]["pay-1"]["params"]["url"] == "https://pay.example/c/1"
    done = await wire.result(
        "pay",
        {"amount": 5},
        responses={"pay-1": {"action": "accept"}},
        state=first["requestState"],
    )
    assert text_of(done) == "payment accept"


async def test_a_client_without_url_mode_gets_the_missing_capability() -> None:
    response = await Wire(build(), caps={"elicitation": {"form": {}}}).call(
        "connect", {"account": "ada"}
    )
    assert response["error"]["code"] == -32021
    assert response["error"]["message"].startswith(
        "Client did not declare the URL elicitation capability required by resolver 'sign_in'; "
        "declare it on the client: pass elicitation_callback= to the Client, with "
        "elicitation_url_mode=True on mrtr's Client"
    )
    assert response["error"]["data"] == {"requiredCapabilities": {"elicitation": {"url": {}}}}


async def test_both_eras_with_a_real_client() -> None:
    seen: list[ElicitRequestURLParams] = []

    async def answer(ctx: Any, params: Any) -> ElicitResult:
        assert isinstance(params, ElicitRequestURLParams)
        seen.append(params)
        return ElicitResult(action="accept")

    FLOWS["bob"] = "token-2"
    with anyio.fail_after(30):
        for mode in ("auto", "legacy"):
            seen.clear()
            async with Client(
                build(), mode=mode, elicitation_callback=answer, elicitation_url_mode=True
            ) as client:
                result = await client.call_tool("connect", {"account": "bob"})
                paid = await client.call_tool("pay", {"amount": 9})
            assert result.content[0].text == "connected bob: token-2"  # type: ignore[union-attr]
            assert paid.content[0].text == "payment accept"  # type: ignore[union-attr]
            assert [p.url for p in seen] == [
                "https://acme.example/login/bob",
                "https://pay.example/c/1",
            ]
            # a 2025-11-25 client gets an elicitationId: the key, or the one given
            ids = [p.elicitation_id for p in seen]
            assert ids == ([None, None] if mode == "auto" else ["sign_in", "pay-1"])


async def test_a_resolver_may_not_name_two_questions() -> None:
    app = MCPServer("x")

    async def both() -> ElicitUrl | Sample:
        return ElicitUrl("go", "https://x.example")

    with pytest.raises(InvalidSignature, match="multiple Elicit/Sample/ListRoots arms"):

        @app.tool()
        async def t(v: Annotated[Any, Resolve(both)]) -> str:
            return "x"
