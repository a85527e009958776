"""Testing a server that asks, with pytest and the testing kit (no client, no network).

    pytest examples/test_mcpserver_provision.py

`MCPServer.preview` shows what round 1 asks; ``app.test_client(answers=...)`` drives the
whole call with scripted answers (by key, by message pattern, or a callable) and returns
a transcript: the keys each round asked, the state size, how often each resolver and
the body ran. ``app.dependency_overrides`` swaps a resolver for a fake;
`assert_questions_stable` fails when a question changes between two renders (a clock
or a live rate in a message would make users answer again).
"""

from __future__ import annotations

import anyio

from mrtr.server import Answers, assert_questions_stable

try:
    from mcpserver_provision import Region, app, ask_region
except ImportError:  # collected from the repository root
    from examples.mcpserver_provision import Region, app, ask_region  # type: ignore[no-redef]


async def round_one() -> list[str]:
    preview = await app.preview("provision", {"name": "orders"})
    return preview.keys


def test_round_one_asks_for_the_region_first() -> None:
    assert anyio.run(round_one) == ["ask_region"]


async def full_call() -> None:
    answers = Answers({"ask_region": {"region": "us-east-1"}}, by_message={r"^Create": True})
    async with app.test_client(answers=answers) as client:
        transcript = await client.call_tool("provision", {"name": "orders"})
    assert transcript.result["content"][0]["text"] == "Provisioned 'orders' in us-east-1."
    assert transcript.asked == [["ask_region"], ["ask_confirm"], []]
    assert transcript.body_runs == 1


def test_a_full_call_with_scripted_answers() -> None:
    anyio.run(full_call)


async def declined() -> None:
    async def fake_region(name: str) -> Region:
        return Region(region="ap-south-1")

    app.dependency_overrides[ask_region] = fake_region
    try:
        async with app.test_client(answers={"ask_confirm": Answers.DECLINE}) as client:
            transcript = await client.call_tool("provision", {"name": "orders"})
    finally:
        app.dependency_overrides.clear()
    assert transcript.result["content"][0]["text"] == "Nothing created (decline)."
    assert transcript.asked == [["ask_confirm"], []]


def test_a_fake_resolver_and_a_decline() -> None:
    anyio.run(declined)


def test_the_questions_are_stable() -> None:
    anyio.run(assert_questions_stable, app, "provision", {"name": "orders"})
