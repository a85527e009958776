"""The testing kit: preview, the scripted client and its transcript, overrides, stability."""

from __future__ import annotations

import itertools
import re
from typing import Annotated, Any

import pytest
from pydantic import BaseModel

from mrtr.server import (
    AcceptedElicitation,
    Answers,
    Context,
    Elicit,
    ElicitationResult,
    MCPServer,
    Resolve,
    Sample,
    assert_questions_stable,
)
from mrtr.types import CreateMessageResult, ElicitResult, InputRequiredResult

from ._drive import resolver_fn

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
    ask_region_fn = resolver_fn(app, "deploy", "ask_region")

    async def fake(name: str) -> Region:
        return Region(region="test")

    app.dependency_overrides[ask_region_fn] = fake
    shown = await app.preview("deploy", {"name": "db"})
    assert shown.messages() == {"ask_go": "Deploy to test?"}
    app.dependency_overrides.clear()
    assert (await app.preview("deploy", {"name": "db"})).keys == ["ask_region"]


async def test_assigning_dependency_overrides_replaces_what_requests_read() -> None:
    # the requests read the app's overrides through its spec: a new mapping assigned
    # after registration must reach them as a fake set by key does
    app = build()
    ask_region_fn = resolver_fn(app, "deploy", "ask_region")
    app.dependency_overrides = {ask_region_fn: lambda: Region(region="assigned")}
    shown = await app.preview("deploy", {"name": "db"})
    assert shown.messages() == {"ask_go": "Deploy to assigned?"}
    app.dependency_overrides = app.dependency_overrides  # the same mapping: kept
    assert (await app.preview("deploy", {"name": "db"})).keys == ["ask_go"]
    app.dependency_overrides = {}
    assert (await app.preview("deploy", {"name": "db"})).keys == ["ask_region"]


FIXED_LIMITS: dict[str, tuple[Any, Any]] = {  # knob: (made with, assigned later)
    "max_state_bytes": (1234, 10),
    "allow_unsealed_answers": (True, False),
    "legacy_shim": (False, True),
    "legacy_shim_max_rounds": (3, 30),
    "max_uri_length": (99, 9999),
    "allow_path_traversal": (True, False),
}


@pytest.mark.parametrize("knob", sorted(FIXED_LIMITS))
def test_the_limits_are_fixed_when_the_server_is_made(knob: str) -> None:
    # request time reads them from the frozen spec: a later assignment would be ignored,
    # so it is refused, and the spec keeps the value the server was made with
    made_with, assigned = FIXED_LIMITS[knob]
    app = MCPServer("limits", **{knob: made_with})
    assert getattr(app, knob) == getattr(app.spec, knob) == made_with
    with pytest.raises(AttributeError):
        setattr(app, knob, assigned)
    assert getattr(app, knob) == getattr(app.spec, knob) == made_with


async def test_an_override_is_called_with_its_own_parameters() -> None:
    app = build()
    ask_region_fn = resolver_fn(app, "deploy", "ask_region")
    app.dependency_overrides[ask_region_fn] = lambda: Region(region="fake")  # takes nothing
    answers = Answers({"ask_go": True})
    async with app.test_client(answers=answers) as client:
        transcript = await client.call_tool("deploy", {"name": "db"})
    assert transcript.result["content"][0]["text"] == "db -> fake"
    assert transcript.exception is None and transcript.why is None

    def by_keyword(**given: Any) -> Region:  # **kwargs: everything the resolver gets
        return Region(region=f"r-{given['name']}")

    app.dependency_overrides[ask_region_fn] = by_keyword
    async with app.test_client(answers=answers) as client:
        transcript = await client.call_tool("deploy", {"name": "db"})
    assert transcript.result["content"][0]["text"] == "db -> r-db"


async def test_the_transcript_says_why_a_call_failed() -> None:
    app = build()
    ask_region_fn = resolver_fn(app, "deploy", "ask_region")
    app.dependency_overrides[ask_region_fn] = lambda zone: Region(region=zone)
    async with app.test_client(answers=Answers({"ask_go": True})) as client:
        transcript = await client.call_tool("deploy", {"name": "db"})
    assert transcript.result["isError"] is True
    assert transcript.result["content"][0]["text"] == "Error executing tool deploy"  # the client
    assert isinstance(transcript.exception, TypeError)  # the test: why
    assert transcript.why is not None
    assert "the override of build.<locals>.ask_region takes 'zone'" in transcript.why
    assert "(it gets: name)" in transcript.why

    @app.tool()
    async def broken() -> str:
        raise KeyError("missing")

    async with app.test_client() as client:
        transcript = await client.call_tool("broken")
    assert transcript.why == "KeyError: 'missing'"


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


# --- prompts and resources --------------------------------------------------------------


def build_reports() -> MCPServer:
    """A prompt, a template and a static resource that ask, each in another form."""
    app = MCPServer("reports")

    async def ask_audience(topic: str) -> Elicit[str]:
        return Elicit(f"Who is the briefing on {topic} for?", str)

    @app.prompt()
    async def briefing(topic: str, audience: Annotated[str, Resolve(ask_audience)]) -> str:
        return f"Brief {audience} on {topic}."

    @app.resource("report://{year}")
    async def report(year: str, ctx: Context) -> str:
        fmt = await ctx.ask(Elicit(f"Format of the {year} report?", str, key="format"))
        return f"report {year} as {fmt.data}" if fmt.action == "accept" else "no report"

    @app.resource("static://quarter")
    def quarter(ctx: Context) -> str | InputRequiredResult:
        answer = (ctx.input_responses or {}).get("quarter")
        if isinstance(answer, ElicitResult) and answer.content and ctx.request_state == "q:v1":
            return f"quarter {answer.content['value']}"
        return InputRequiredResult(
            input_requests={"quarter": Elicit("Which quarter?", str).request()},
            request_state="q:v1",
        )

    @app.prompt()
    def hello() -> str:
        return "hello"

    return app


async def test_preview_of_a_prompt_a_template_and_a_manual_static_resource() -> None:
    app = build_reports()
    shown = await app.preview_prompt("briefing", {"topic": "Q3"})
    assert shown.asks and shown.messages() == {"ask_audience": "Who is the briefing on Q3 for?"}
    assert shown.to_wire()["ask_audience"]["method"] == "elicitation/create"
    template = await app.preview_resource("report://2025")
    assert template.messages() == {"format": "Format of the 2025 report?"}
    assert template.request_state is None  # the engine's own state is not shown
    manual = await app.preview_resource("static://quarter")
    assert manual.keys == ["quarter"] and manual.request_state == "q:v1"
    assert manual.result is None
    done = await app.preview_prompt("hello")
    assert not done.asks and done.result == "hello"


async def test_preview_names_what_is_not_registered() -> None:
    app = build_reports()
    with pytest.raises(KeyError, match="no prompt 'nope'"):
        await app.preview_prompt("nope")
    with pytest.raises(KeyError, match="no resource or resource template serves 'x://y'"):
        await app.preview_resource("x://y")
    with pytest.raises(KeyError, match="no tool 'briefing'"):
        await app.preview("briefing", {"topic": "Q3"})  # a prompt is not a tool
    with pytest.raises(ValueError, match="kind must be"):
        await assert_questions_stable(app, "hello", kind="widget")  # type: ignore[arg-type]


async def test_scripted_client_drives_prompts_and_resources() -> None:
    app = build_reports()
    answers = Answers(
        {"ask_audience": "the board", "quarter": "Q2"}, by_message={r"^Format of": "md"}
    )
    async with app.test_client(answers=answers) as client:
        prompt = await client.get_prompt("briefing", {"topic": "Q3"})
        template = await client.read_resource("report://2025")
        static = await client.read_resource("static://quarter")
    assert prompt.result["messages"][0]["content"]["text"] == "Brief the board on Q3."
    assert prompt.asked == [["ask_audience"], []] and prompt.body_runs == 1
    assert prompt.resolver_runs("ask_audience") == 2
    assert template.result["contents"][0]["text"] == "report 2025 as md"
    assert template.asked == [["format"], []]
    assert template.body_runs == 2  # replay style: the body runs again on the retry
    assert static.result["contents"][0]["text"] == "quarter Q2"
    assert static.asked == [["quarter"], []] and static.rounds[0].state_bytes > 0


async def test_scripted_prompt_errors_are_recorded() -> None:
    app = build_reports()
    async with app.test_client(answers={"ask_audience": Answers.DECLINE}) as client:
        declined = await client.get_prompt("briefing", {"topic": "Q3"})
    assert declined.result is None and declined.error is not None
    assert declined.error["code"] == -32603
    assert "could not resolve: elicitation was decline" in declined.error["message"]


async def test_stability_check_covers_prompts_and_resources() -> None:
    app = build_reports()
    await assert_questions_stable(app, "briefing", {"topic": "Q3"}, kind="prompt")
    await assert_questions_stable(app, "report://2025", kind="resource")
    await assert_questions_stable(app, "static://quarter", kind="resource")
    ticks = itertools.count()
    clocky = MCPServer("clock")

    @clocky.prompt()
    async def status(ctx: Context) -> str:
        answer = await ctx.ask(Elicit(f"Status as of tick {next(ticks)}?", str, key="status"))
        return answer.data if isinstance(answer, AcceptedElicitation) else "none"

    @clocky.resource("rate://{pair}")
    def rate(pair: str) -> InputRequiredResult:
        return InputRequiredResult(
            input_requests={"ok": Elicit(f"Buy {pair} at {next(ticks)}?", bool).request()}
        )

    with pytest.raises(
        AssertionError, match=r"prompt 'status': the questions \['status'\] change .*message"
    ):
        await assert_questions_stable(clocky, "status", kind="prompt")
    with pytest.raises(AssertionError, match=r"resource 'rate://eurusd'.*\['ok'\]"):
        await assert_questions_stable(clocky, "rate://eurusd", kind="resource")


async def test_stability_check_names_the_part_that_changed() -> None:
    flips = itertools.cycle([str, int])
    app = MCPServer("shape")

    async def ask(ctx: Context) -> Elicit[Any]:
        return Elicit("How many?", next(flips))

    @app.tool()
    async def count(n: Annotated[Any, Resolve(ask)]) -> str:
        return "x"

    with pytest.raises(AssertionError, match=r"\(schema differs\)"):
        await assert_questions_stable(app, "count")
