"""The testing kit: preview, the scripted client and its transcript, overrides, stability."""

from __future__ import annotations

import itertools
import re
from typing import Annotated

import pytest
from pydantic import BaseModel

from mrtr.server import (
    Answers,
    Context,
    Elicit,
    ElicitationResult,
    MCPServer,
    Resolve,
    Sample,
    assert_questions_stable,
)
from mrtr.types import CreateMessageResult

pytestmark = pytest.mark.anyio


class Region(BaseModel):
    region: str


def build() -> MCPServer:
    app = MCPServer("kit")

    async def ask_region(name: str) -> Elicit[Region]:
        return Elicit(f"Which region for {name!r}?", Region)

    async def ask_go(region: Annotated[Region, Resolve(ask_region)]) -> Elicit[bool]:
        return Elicit(f"Deploy to {region.region}?", bool)

    @app.tool()
    async def deploy(
        name: str,
        region: Annotated[Region, Resolve(ask_region)],
        go: Annotated[ElicitationResult[bool], Resolve(ask_go)],
    ) -> str:
        return f"{name} -> {region.region}" if go.action == "accept" and go.data else "stopped"

    @app.tool()
    async def plain(x: int) -> int:
        return x * 2

    async def summarise() -> Sample:
        return Sample("Summarise", max_tokens=5)

    @app.tool()
    async def summary(said: Annotated[CreateMessageResult, Resolve(summarise)]) -> str:
        return said.model

    return app


async def test_preview_shows_round_one_without_a_client() -> None:
    app = build()
    shown = await app.preview("deploy", {"name": "db"})
    assert shown.keys == ["ask_region"]
    assert shown.messages() == {"ask_region": "Which region for 'db'?"}
    done = await app.preview("plain", {"x": 2})
    assert done.keys == [] and done.result == 4


async def test_scripted_client_records_rounds_keys_and_runs() -> None:
    app = build()
    answers = Answers({"ask_region": {"region": "eu"}}, by_message={r"^Deploy to": True})
    async with app.test_client(answers=answers) as client:
        transcript = await client.call_tool("deploy", {"name": "db"})
    assert transcript.result["content"][0]["text"] == "db -> eu"
    assert transcript.asked == [["ask_region"], ["ask_go"], []]
    assert transcript.body_runs == 1
    assert transcript.resolver_runs("ask_region") == 3  # resolvers re-run every round
    assert transcript.resolver_runs("ask_go") == 2
    assert all(r.state_bytes > 0 for r in transcript.rounds[:2])


async def test_scripted_declines_callables_and_unanswered_questions() -> None:
    app = build()
    async with app.test_client(
        answers={"ask_region": {"region": "us"}, "ask_go": Answers.DECLINE}
    ) as c:
        assert (await c.call_tool("deploy", {"name": "x"})).result["content"][0][
            "text"
        ] == "stopped"
    model = Answers(
        {
            "summarise": lambda request: {
                "role": "assistant",
                "content": {"type": "text", "text": "ok"},
                "model": f"echo-{request.params.max_tokens}",
            }
        }
    )
    async with app.test_client(answers=model) as c:
        assert (await c.call_tool("summary")).result["content"][0]["text"] == "echo-5"
    async with app.test_client(answers={}) as c:
        with pytest.raises(
            AssertionError, match=re.escape("no scripted answer for question 'ask_region'")
        ):
            await c.call_tool("deploy", {"name": "x"})


async def test_scripted_client_reports_errors_and_capabilities() -> None:
    app = build()
    async with app.test_client(answers={}, capabilities={}) as c:
        transcript = await c.call_tool("deploy", {"name": "x"})
    assert transcript.error is not None and transcript.error["code"] == -32021


async def test_dependency_overrides_in_a_test() -> None:
    app = build()
    (node,) = [n for n in app._tools["deploy"].spec.plan.nodes if n.key == "ask_region"]  # type: ignore[union-attr]

    async def fake(name: str) -> Region:
        return Region(region="test")

    app.dependency_overrides[node.fn] = fake
    shown = await app.preview("deploy", {"name": "db"})
    assert shown.messages() == {"ask_go": "Deploy to test?"}
    app.dependency_overrides.clear()
    assert (await app.preview("deploy", {"name": "db"})).keys == ["ask_region"]


async def test_stability_check_catches_a_clock_in_the_question() -> None:
    app = build()
    await assert_questions_stable(app, "deploy", {"name": "db"})
    ticks = itertools.count()
    clocky = MCPServer("clock")

    async def ask(ctx: Context) -> Elicit[bool]:
        return Elicit(f"Proceed at {next(ticks)}?", bool)

    @clocky.tool()
    async def act(ok: Annotated[bool, Resolve(ask)]) -> str:
        return "x"

    with pytest.raises(AssertionError, match=r"the questions \['ask'\] change"):
        await assert_questions_stable(clocky, "act")
