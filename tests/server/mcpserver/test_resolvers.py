"""The dependency form: batching, partial answers, body once, outcomes, validation, pinning."""

from __future__ import annotations

import enum
import logging
from typing import Annotated, Any, Literal

import anyio
import anyio.lowlevel
import pytest
from pydantic import BaseModel, Field

from mrtr import Client
from mrtr.server import (
    AcceptedElicitation,
    CancelledElicitation,
    Context,
    DeclinedElicitation,
    Elicit,
    ElicitationResult,
    ListRoots,
    MCPServer,
    Resolve,
    Sample,
    ToolError,
)
from mrtr.types import (
    CreateMessageResult,
    ElicitResult,
    InputRequiredResult,
    ListRootsResult,
    Root,
    TextContent,
)

from ._drive import Wire, accept, resolver_fn, text_of

pytestmark = pytest.mark.anyio


class Region(BaseModel):
    region: str


class Confirm(BaseModel):
    ok: bool


class Runs:
    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def hit(self, name: str) -> None:
        self.counts[name] = self.counts.get(name, 0) + 1


def provisioner(runs: Runs, **options: Any) -> MCPServer:
    app = MCPServer("prov", **options)

    async def ask_region(name: str) -> Region | Elicit[Region]:
        runs.hit("region")
        return Elicit(f"Which region for {name!r}?", Region)

    async def ask_confirm(name: str) -> Elicit[Confirm]:
        runs.hit("confirm")
        return Elicit(f"Really provision {name!r}?", Confirm)

    @app.tool()
    async def provision(
        name: str,
        region: Annotated[Region, Resolve(ask_region)],
        confirm: Annotated[ElicitationResult[Confirm], Resolve(ask_confirm)],
    ) -> str:
        runs.hit("body")
        if not isinstance(confirm, AcceptedElicitation) or not confirm.data.ok:
            return f"not provisioned ({confirm.action})"
        return f"provisioned {name} in {region.region}"

    return app


async def test_one_round_asks_every_independent_question_and_partial_answers_reask_the_rest() -> (
    None
):
    runs = Runs()
    wire = Wire(provisioner(runs))
    tools = (await wire.send("tools/list"))["result"]["tools"]
    assert tools[0]["inputSchema"]["properties"] == {"name": {"title": "Name", "type": "string"}}
    first = await wire.result("provision", {"name": "db"})
    assert first["resultType"] == "input_required"
    assert list(first["inputRequests"]) == ["ask_region", "ask_confirm"]  # readable keys
    assert first["inputRequests"]["ask_region"]["params"]["message"] == "Which region for 'db'?"
    assert runs.counts == {"region": 1, "confirm": 1}
    second = await wire.result(
        "provision",
        {"name": "db"},
        responses={"ask_region": accept(region="eu-west-1")},
        state=first["requestState"],
    )
    assert list(second["inputRequests"]) == ["ask_confirm"]
    assert "body" not in runs.counts
    done = await wire.result(
        "provision",
        {"name": "db"},
        responses={"ask_confirm": accept(ok=True)},
        state=second["requestState"],
    )
    assert text_of(done) == "provisioned db in eu-west-1"
    assert runs.counts == {"region": 3, "confirm": 3, "body": 1}


async def test_decline_is_an_outcome_or_a_tool_error_by_annotation() -> None:
    runs = Runs()
    wire = Wire(provisioner(runs))
    first = await wire.result("provision", {"name": "db"})
    answers = {"ask_region": accept(region="r"), "ask_confirm": {"action": "decline"}}
    done = await wire.result(
        "provision", {"name": "db"}, responses=answers, state=first["requestState"]
    )
    assert text_of(done) == "not provisioned (decline)"  # ElicitationResult[T] branches
    answers = {"ask_region": {"action": "cancel"}, "ask_confirm": accept(ok=True)}
    failed = await wire.result(
        "provision", {"name": "db"}, responses=answers, state=first["requestState"]
    )
    assert failed["isError"] is True
    assert text_of(failed) == (
        "Error executing tool provision: Resolver for parameter 'region' could not resolve: "
        "elicitation was cancel"
    )


async def test_a_recorded_decline_is_not_asked_again() -> None:
    runs = Runs()
    wire = Wire(provisioner(runs))
    first = await wire.result("provision", {"name": "db"})
    second = await wire.result(
        "provision",
        {"name": "db"},
        responses={"ask_confirm": {"action": "decline"}},
        state=first["requestState"],
    )
    assert list(second["inputRequests"]) == ["ask_region"]
    done = await wire.result(
        "provision",
        {"name": "db"},
        responses={"ask_region": accept(region="r")},
        state=second["requestState"],
    )
    assert text_of(done) == "not provisioned (decline)"


async def test_answers_are_validated() -> None:
    runs = Runs()
    wire = Wire(provisioner(runs))
    first = await wire.result("provision", {"name": "db"})
    state = first["requestState"]
    bad = await wire.result(
        "provision", {"name": "db"}, responses={"ask_region": accept(zone=3)}, state=state
    )
    assert text_of(bad) == (
        "Error executing tool provision: Resolver 'ask_region' received an accepted elicitation "
        "whose content does not match the requested schema (region: missing)"
    )
    empty = await wire.result(
        "provision", {"name": "db"}, responses={"ask_region": {"action": "accept"}}, state=state
    )
    assert "with no content" in text_of(empty)
    wrong = await wire.result(
        "provision",
        {"name": "db"},
        responses={"ask_region": {"roots": []}},
        state=state,
    )
    assert "non-elicitation response" in text_of(wrong)
    assert "body" not in runs.counts


async def test_missing_capability_is_32021_naming_the_question() -> None:
    wire = Wire(provisioner(Runs()), caps={"sampling": {}})
    response = await wire.call("provision", {"name": "db"})
    assert response["error"] == {
        "code": -32021,
        "message": (
            "Client did not declare the form elicitation capability required by resolver "
            "'ask_region'; declare it on the client: pass elicitation_callback= to the Client, "
            'or capabilities={"elicitation": {"form": {}}} to mrtr\'s Client to answer by hand '
            "(the server refuses before asking because the spec forbids an input request for a "
            "capability the client did not declare)"
        ),
        "data": {"requiredCapabilities": {"elicitation": {"form": {}}}},
    }


async def test_client_sent_values_for_resolved_parameters_are_ignored() -> None:
    runs = Runs()
    wire = Wire(provisioner(runs))
    first = await wire.result(
        "provision", {"name": "db", "region": {"region": "forged"}, "confirm": {"ok": True}}
    )
    assert first["resultType"] == "input_required"


async def test_state_replayed_on_other_arguments_is_rejected() -> None:
    wire = Wire(provisioner(Runs()))
    first = await wire.result("provision", {"name": "db"})
    response = await wire.call(
        "provision",
        {"name": "other"},
        responses={"ask_region": accept(region="r")},
        state=first["requestState"],
    )
    assert response["error"]["message"] == "Invalid or expired requestState"


async def test_an_answer_without_state_or_under_an_unknown_key_is_asked_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    wire = Wire(provisioner(Runs()))
    with caplog.at_level(logging.WARNING, "mrtr.server.mcpserver"):
        again = await wire.result(
            "provision", {"name": "db"}, responses={"ask_region": accept(region="r")}
        )
    assert list(again["inputRequests"]) == ["ask_region", "ask_confirm"]
    assert "without the engine's state" in caplog.text
    assert "'r'" not in caplog.text  # keys, never contents
    first = await wire.result("provision", {"name": "db"})
    bogus = await wire.result(
        "provision", {"name": "db"}, responses={"bogus": accept(x=1)}, state=first["requestState"]
    )
    assert list(bogus["inputRequests"]) == ["ask_region", "ask_confirm"]


def pinned(messages: list[str], **elicit: Any) -> MCPServer:
    """A tool whose question's message is taken from `messages`, one per resolver run."""
    app = MCPServer("pin")

    async def ask_ok() -> Elicit[Confirm]:
        text = messages.pop(0) if len(messages) > 1 else messages[0]
        return Elicit(text, Confirm, **elicit)

    @app.tool()
    async def act(ok: Annotated[Confirm, Resolve(ask_ok)]) -> str:
        return f"ok={ok.ok}"

    return app


async def test_a_reworded_question_is_asked_again_once() -> None:
    wire = Wire(pinned(["v1", "v2", "v2"]))
    first = await wire.result("act")
    assert first["inputRequests"]["ask_ok"]["params"]["message"] == "v1"
    again = await wire.result(
        "act", responses={"ask_ok": accept(ok=True)}, state=first["requestState"]
    )
    assert again["inputRequests"]["ask_ok"]["params"]["message"] == "v2"
    done = await wire.result(
        "act", responses={"ask_ok": accept(ok=True)}, state=again["requestState"]
    )
    assert text_of(done) == "ok=True"


async def test_a_question_that_keeps_changing_stops_after_two_answers(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ticks = iter(range(100))
    app = MCPServer("clock")
    answered = 0

    async def ask_clock() -> Elicit[Confirm]:
        return Elicit(f"Proceed at t={next(ticks)}?", Confirm)

    @app.tool()
    async def act(ok: Annotated[Confirm, Resolve(ask_clock)]) -> str:
        return "done"

    async def answer(ctx: Any, params: Any) -> ElicitResult:
        nonlocal answered
        answered += 1
        return ElicitResult(action="accept", content={"ok": True})

    with caplog.at_level(logging.WARNING, "mrtr.server.mcpserver"), anyio.fail_after(30):
        async with Client(app, elicitation_callback=answer) as client:
            result = await client.call_tool("act")
    assert result.is_error is True
    assert result.content[0].text == (  # type: ignore[union-attr]
        "Error executing tool act: question 'ask_clock' changed between rounds twice (message "
        "differs); build it only from the arguments and earlier answers (or use "
        "Elicit(..., pin='schema') for a message that shows live data)"
    )
    assert answered == 2  # the official SDK: until the client's round cap
    assert "Proceed at" not in caplog.text


async def test_pin_schema_keeps_an_answer_across_message_changes() -> None:
    wire = Wire(pinned(["rate 1.01", "rate 1.02"], pin="schema"))
    first = await wire.result("act")
    done = await wire.result(
        "act", responses={"ask_ok": accept(ok=True)}, state=first["requestState"]
    )
    assert text_of(done) == "ok=True"


async def test_a_schema_change_names_the_schema() -> None:
    app = MCPServer("schema")
    shapes: list[type[BaseModel]] = [Confirm, Region, Confirm]

    async def ask() -> Elicit[Any]:
        return Elicit("Same words", shapes.pop(0))

    @app.tool()
    async def act(x: Annotated[Any, Resolve(ask)]) -> str:
        return "done"

    wire = Wire(app)
    first = await wire.result("act")
    second = await wire.result(
        "act", responses={"ask": accept(ok=True)}, state=first["requestState"]
    )
    assert list(second["inputRequests"]) == ["ask"]
    third = await wire.result(
        "act", responses={"ask": accept(region="x")}, state=second["requestState"]
    )
    assert "(schema differs)" in text_of(third)


async def test_a_recorded_answer_whose_question_was_reworded_is_asked_again() -> None:
    messages = ["a1", "a1", "a2"]
    app = MCPServer("rec")

    async def first_q() -> Elicit[Confirm]:
        return Elicit(messages.pop(0) if len(messages) > 1 else messages[0], Confirm)

    async def second_q() -> Elicit[Region]:
        return Elicit("Region?", Region)

    @app.tool()
    async def act(
        a: Annotated[Confirm, Resolve(first_q)], b: Annotated[Region, Resolve(second_q)]
    ) -> str:
        return f"{a.ok} {b.region}"

    wire = Wire(app)
    r1 = await wire.result("act")
    r2 = await wire.result("act", responses={"first_q": accept(ok=True)}, state=r1["requestState"])
    assert list(r2["inputRequests"]) == ["second_q"]
    r3 = await wire.result(
        "act", responses={"second_q": accept(region="x")}, state=r2["requestState"]
    )
    assert list(r3["inputRequests"]) == ["first_q"]  # a1 -> a2: the recorded answer is stale
    done = await wire.result(
        "act", responses={"first_q": accept(ok=False)}, state=r3["requestState"]
    )
    assert text_of(done) == "False x"


async def test_dependent_questions_take_rounds_and_resolvers_see_earlier_answers() -> None:
    app = MCPServer("chain")

    async def ask_region() -> Elicit[Region]:
        return Elicit("Region?", Region)

    async def ask_zone(region: Annotated[Region, Resolve(ask_region)]) -> Elicit[str]:
        return Elicit(f"Zone in {region.region}?", str)

    async def label(zone: Annotated[str, Resolve(ask_zone)], ctx: Context) -> str:
        return zone.upper()

    @app.tool()
    async def place(where: Annotated[str, Resolve(label)]) -> str:
        return where

    wire = Wire(app)
    r1 = await wire.result("place")
    assert list(r1["inputRequests"]) == ["ask_region"]
    r2 = await wire.result(
        "place", responses={"ask_region": accept(region="eu")}, state=r1["requestState"]
    )
    assert r2["inputRequests"]["ask_zone"]["params"]["message"] == "Zone in eu?"
    assert r2["inputRequests"]["ask_zone"]["params"]["requestedSchema"] == {
        "type": "object",
        "properties": {"value": {"type": "string"}},
        "required": ["value"],
    }
    done = await wire.result(
        "place", responses={"ask_zone": accept(value="b")}, state=r2["requestState"]
    )
    assert text_of(done) == "B"


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


async def test_scalar_and_enum_questions_unwrap(anyio_backend: str) -> None:
    app = MCPServer("scalars")

    async def ask_n() -> Elicit[int]:
        return Elicit("How many?", int)

    async def ask_color() -> Elicit[Color]:
        return Elicit("Which color?", Color)

    async def ask_size() -> Elicit[Literal["s", "m"]]:
        return Elicit("Size?", Literal["s", "m"])

    async def ask_go() -> Elicit[bool]:
        return Elicit("Go?", bool)

    @app.tool()
    async def order(
        n: Annotated[int, Resolve(ask_n)],
        color: Annotated[Color, Resolve(ask_color)],
        size: Annotated[str, Resolve(ask_size)],
        go: Annotated[bool, Resolve(ask_go)],
    ) -> str:
        return f"{n} {color.value} {size} {go}"

    schemas: dict[str, Any] = {}

    async def answer(ctx: Any, params: Any) -> ElicitResult:
        schemas[params.message] = params.requested_schema["properties"]["value"]
        value = {"How many?": 3, "Which color?": "blue", "Size?": "m", "Go?": True}[params.message]
        return ElicitResult(action="accept", content={"value": value})

    async with Client(app, elicitation_callback=answer) as client:
        result = await client.call_tool("order")
    assert result.content[0].text == "3 blue m True"  # type: ignore[union-attr]
    assert schemas["Which color?"]["enum"] == ["red", "blue"]
    assert schemas["Size?"] == {"enum": ["s", "m"], "type": "string"}


async def test_reask_asks_once_more_with_the_problem_then_stops() -> None:
    class Age(BaseModel):
        age: int = Field(ge=0)

    app = MCPServer("reask")

    async def ask_age() -> Elicit[Age]:
        return Elicit("Age?", Age, on_invalid="reask")

    @app.tool()
    async def register(age: Annotated[Age, Resolve(ask_age)]) -> str:
        return str(age.age)

    wire = Wire(app)
    r1 = await wire.result("register")
    r2 = await wire.result(
        "register", responses={"ask_age": accept(age=-1)}, state=r1["requestState"]
    )
    message = r2["inputRequests"]["ask_age"]["params"]["message"]
    assert message.startswith("Age?\n\nThe previous answer was not valid (age)")
    ok = await wire.result(
        "register", responses={"ask_age": accept(age=30)}, state=r2["requestState"]
    )
    assert text_of(ok) == "30"
    r3 = await wire.result(
        "register", responses={"ask_age": accept(age=-5)}, state=r2["requestState"]
    )
    assert r3["isError"] is True  # the second invalid answer: max_reasks=1


async def test_sample_and_roots_resolve_to_their_results(anyio_backend: str) -> None:
    app = MCPServer("llm")

    async def summarise(topic: str) -> Sample:
        return Sample(f"Summarise {topic}", max_tokens=50)

    async def roots() -> ListRoots:
        return ListRoots()

    @app.tool()
    async def brief(
        topic: str,
        summary: Annotated[CreateMessageResult, Resolve(summarise)],
        where: Annotated[ListRootsResult, Resolve(roots)],
    ) -> str:
        assert isinstance(summary.content, TextContent)
        return f"{summary.content.text} @ {where.roots[0].uri}"

    async def sample(ctx: Any, params: Any) -> CreateMessageResult:
        return CreateMessageResult(
            role="assistant", content=TextContent(type="text", text="short"), model="m"
        )

    async def list_roots(ctx: Any) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri="file:///work")])

    for mode in ("auto", "legacy"):
        async with Client(
            app, mode=mode, sampling_callback=sample, list_roots_callback=list_roots
        ) as client:
            result = await client.call_tool("brief", {"topic": "q3"})
        assert result.content[0].text == "short @ file:///work"  # type: ignore[union-attr]


async def test_the_body_returning_an_undeclared_input_required_is_an_error() -> None:
    app = MCPServer("guard")

    async def ask() -> Elicit[Confirm]:
        return Elicit("ok?", Confirm)

    @app.tool()
    async def sneaky(ok: Annotated[Confirm, Resolve(ask)]):  # type: ignore[no-untyped-def]
        return InputRequiredResult(request_state="mine")

    wire = Wire(app)
    r1 = await wire.result("sneaky")
    done = await wire.result("sneaky", responses={"ask": accept(ok=True)}, state=r1["requestState"])
    assert done["isError"] is True
    assert "returned an InputRequiredResult" in text_of(done)


async def test_independent_resolvers_run_concurrently(anyio_backend: str) -> None:
    app = MCPServer("par")
    started: list[str] = []
    both = anyio.Event()

    async def slow(name: str) -> str:
        started.append(name)
        if len(started) == 2:
            both.set()
        with anyio.fail_after(10):  # sequential resolvers would wait here forever
            await both.wait()
        return name

    async def lookup_a() -> str:
        return await slow("a")

    async def lookup_b() -> str:
        return await slow("b")

    @app.tool()
    async def combined(
        a: Annotated[str, Resolve(lookup_a)], b: Annotated[str, Resolve(lookup_b)]
    ) -> str:
        return a + b

    result = await Wire(app).result("combined")
    assert text_of(result) == "ab"


async def test_a_failing_resolver_cancels_its_siblings_and_is_its_own_error() -> None:
    app = MCPServer("fail")
    cancelled = anyio.Event()

    async def hangs() -> str:
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()
        return "never"  # pragma: no cover

    async def fails() -> str:
        await anyio.lowlevel.checkpoint()
        raise ToolError("lookup failed")

    @app.tool()
    async def both(a: Annotated[str, Resolve(hangs)], b: Annotated[str, Resolve(fails)]) -> str:
        return a + b

    with anyio.fail_after(10):
        result = await Wire(app).result("both")
    assert text_of(result) == "Error executing tool both: lookup failed"
    assert cancelled.is_set()


async def test_state_budget_names_the_largest_entry() -> None:
    app = MCPServer("big", max_state_bytes=2000)

    async def summarise() -> Sample:
        return Sample("long please", max_tokens=10_000)

    async def ask_ok() -> Elicit[Confirm]:
        return Elicit("ok?", Confirm)

    @app.tool()
    async def t(
        s: Annotated[CreateMessageResult, Resolve(summarise)],
        ok: Annotated[Confirm, Resolve(ask_ok)],
    ) -> str:
        return "done"

    wire = Wire(app)
    r1 = await wire.result("t")
    big = {"role": "assistant", "content": {"type": "text", "text": "x" * 5000}, "model": "m"}
    r2 = await wire.result("t", responses={"summarise": big}, state=r1["requestState"])
    assert r2["isError"] is True
    assert "over max_state_bytes=2000" in text_of(r2) and "'summarise'" in text_of(r2)


async def test_ctx_ask_in_the_body_replays_and_shares_a_call_with_resolvers(
    anyio_backend: str,
) -> None:
    app = MCPServer("ask")
    body_runs = 0

    async def ask_region() -> Elicit[Region]:
        return Elicit("Region?", Region)

    @app.tool()
    async def deploy(region: Annotated[Region, Resolve(ask_region)], ctx: Context) -> str:
        nonlocal body_runs
        body_runs += 1
        go = await ctx.ask(Elicit(f"Deploy to {region.region}?", bool, key="go"))
        if not isinstance(go, AcceptedElicitation) or not go.data:
            return "stopped"
        a, b = await ctx.ask_all(Elicit("Tag?", str, key="tag"), Elicit("Note?", str, key="note"))
        return f"{region.region} {a.data} {b.data}"

    messages: list[str] = []

    async def answer(ctx: Any, params: Any) -> ElicitResult:
        messages.append(params.message)
        if params.message == "Region?":
            return ElicitResult(action="accept", content={"region": "eu"})
        value = {"Deploy to eu?": True, "Tag?": "v1", "Note?": "n"}[params.message]
        return ElicitResult(action="accept", content={"value": value})

    async with Client(app, elicitation_callback=answer) as client:
        result = await client.call_tool("deploy")
    assert result.content[0].text == "eu v1 n"  # type: ignore[union-attr]
    assert messages[:2] == ["Region?", "Deploy to eu?"]
    assert sorted(messages[2:]) == ["Note?", "Tag?"]  # one round, answered concurrently
    assert body_runs == 3  # replay: the body re-runs after each round of asks
    async with Client(app, mode="legacy", elicitation_callback=answer) as client:
        result = await client.call_tool("deploy")
    assert result.content[0].text == "eu v1 n"  # type: ignore[union-attr]


async def test_ctx_elicit_works_on_both_eras(anyio_backend: str) -> None:
    app = MCPServer("elicit")

    @app.tool()
    async def hello(ctx: Context) -> str:
        who = await ctx.elicit("Who?", str)
        return f"hello {who.data}" if isinstance(who, AcceptedElicitation) else who.action

    async def answer(ctx: Any, params: Any) -> ElicitResult:
        return ElicitResult(action="accept", content={"value": "you"})

    for mode in ("auto", "legacy"):
        async with Client(app, mode=mode, elicitation_callback=answer) as client:
            result = await client.call_tool("hello")
        assert result.content[0].text == "hello you"  # type: ignore[union-attr]


async def test_resolvers_on_prompts_templates_and_static_resources(anyio_backend: str) -> None:
    app = MCPServer("everywhere")

    async def ask_audience(topic: str) -> Elicit[str]:
        return Elicit(f"Audience for {topic}?", str)

    async def ask_static() -> Elicit[str]:
        return Elicit("Which quarter?", str)

    @app.prompt()
    async def briefing(topic: str, audience: Annotated[str, Resolve(ask_audience)]) -> str:
        return f"Brief {audience} on {topic}"

    @app.resource("report://{topic}")
    async def report(topic: str, audience: Annotated[str, Resolve(ask_audience)]) -> str:
        return f"{topic} for {audience}"

    @app.resource("static://quarter")
    async def quarter(q: Annotated[str, Resolve(ask_static)]) -> str:
        return f"quarter {q}"

    async def answer(ctx: Any, params: Any) -> ElicitResult:
        return ElicitResult(
            action="accept",
            content={"value": "the board" if "Audience" in params.message else "Q3"},
        )

    for mode in ("auto", "legacy"):
        async with Client(app, mode=mode, elicitation_callback=answer) as client:
            prompt = await client.get_prompt("briefing", {"topic": "sales"})
            assert prompt.messages[0].content.text == "Brief the board on sales"  # type: ignore[union-attr]
            read = await client.read_resource("report://sales")
            assert read.contents[0].text == "sales for the board"  # type: ignore[union-attr]
            static = await client.read_resource("static://quarter")
            assert static.contents[0].text == "quarter Q3"  # type: ignore[union-attr]
    wire = Wire(app)
    declined = await wire.send("prompts/get", {"name": "briefing", "arguments": {"topic": "x"}})
    state = declined["result"]["requestState"]
    failed = await wire.send(
        "prompts/get",
        {
            "name": "briefing",
            "arguments": {"topic": "x"},
            "inputResponses": {"ask_audience": {"action": "decline"}},
            "requestState": state,
        },
    )
    assert failed["error"]["code"] == -32603
    assert "elicitation was decline" in failed["error"]["message"]


async def test_unstable_question_on_a_prompt_is_a_32603_with_a_reason() -> None:
    ticks = iter(range(100))
    app = MCPServer("p")

    async def ask() -> Elicit[str]:
        return Elicit(f"t={next(ticks)}", str)

    @app.prompt()
    async def p(x: Annotated[str, Resolve(ask)]) -> str:
        return x

    wire = Wire(app)
    state = None
    response: dict[str, Any] = {}
    for _ in range(3):
        params: dict[str, Any] = {"name": "p"}
        if state is not None:
            params.update(inputResponses={"ask": accept(value="v")}, requestState=state)
        response = await wire.send("prompts/get", params)
        if "error" in response:
            break
        state = response["result"]["requestState"]
    assert response["error"]["code"] == -32603
    assert response["error"]["data"] == {
        "reason": "unstable_question",
        "key": "ask",
        "changed": "message",
    }


async def test_dependency_overrides_swap_a_resolver() -> None:
    runs = Runs()
    app = provisioner(runs)
    ask_region_fn = resolver_fn(app, "provision", "ask_region")

    async def fake_region(name: str) -> Region:
        return Region(region="test-1")

    app.dependency_overrides[ask_region_fn] = fake_region
    first = await Wire(app).result("provision", {"name": "db"})
    assert list(first["inputRequests"]) == ["ask_confirm"]
    assert "region" not in runs.counts


async def test_unsealed_asks_at_runtime_need_consent() -> None:
    from mrtr.server import UNSEALED

    app = MCPServer("u", request_state_security=UNSEALED)

    @app.tool()
    async def t(ctx: Context) -> str:
        await ctx.ask(Elicit("?", bool))
        return "x"

    result = await Wire(app).result("t")
    assert result["isError"] is True and "UNSEALED" in text_of(result)
    allowed = MCPServer("u", request_state_security=UNSEALED, allow_unsealed_answers=True)
    allowed.tool()(app.spec.registry.tools["t"].spec.fn)
    asked = await Wire(allowed).result("t")
    assert asked["resultType"] == "input_required"


def _forged_state(key: str, message: str, schema: dict[str, Any], answer: Any) -> str:
    """An engine state saying `key` was answered: every part of it is public."""
    import base64
    import hashlib
    import json

    def fingerprint(text: str) -> str:
        raw = hashlib.sha256(text.encode()).digest()[:16]
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

    canonical = json.dumps(schema, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    pin = f"message={fingerprint('s' + message)};schema={fingerprint(canonical)}"
    return "mrtr.q1:" + json.dumps({"a": {}, "o": {key: [pin, answer]}})


def _payer(**options: Any) -> tuple[MCPServer, list[str]]:
    from mrtr.server import UNSEALED

    app = MCPServer("u", request_state_security=UNSEALED, **options)
    paid: list[str] = []

    @app.tool()
    async def pay(amount: int, ctx: Context) -> str:
        confirm = await ctx.ask(Elicit(f"Pay {amount}?", bool))
        if isinstance(confirm, AcceptedElicitation) and confirm.data:
            paid.append(f"paid {amount}")
            return f"paid {amount}"
        return "not paid"

    return app, paid


async def test_a_hand_made_answered_state_on_an_unsealed_server_is_not_read() -> None:
    schema = {"type": "object", "properties": {"value": {"type": "boolean"}}, "required": ["value"]}
    yes = {"action": "accept", "content": {"value": True}}
    forged = _forged_state("ask1", "Pay 100?", schema, yes)
    # the same state is read where the server allowed unsealed answers: the pin is right
    allowed, paid = _payer(allow_unsealed_answers=True)
    assert text_of(await Wire(allowed).result("pay", {"amount": 100}, state=forged)) == "paid 100"
    assert paid == ["paid 100"]
    app, paid = _payer()
    wire = Wire(app)
    for responses in (None, {"ask1": yes}):
        result = await wire.result("pay", {"amount": 100}, responses=responses, state=forged)
        assert result["isError"] is True
        assert "UNSEALED" in text_of(result) and "allow_unsealed_answers" in text_of(result)
    assert paid == []  # the confirmed branch never ran


async def test_a_forged_reask_count_on_an_allowed_unsealed_server_is_no_crash(
    caplog: pytest.LogCaptureFixture,
) -> None:
    import json

    from mrtr.server import UNSEALED

    app = MCPServer("u", request_state_security=UNSEALED, allow_unsealed_answers=True)

    @app.tool()
    async def pay(ctx: Context) -> str:
        await ctx.ask(Elicit("Pay?", bool, on_invalid="reask"))
        return "paid"

    wire = Wire(app)
    first = await wire.result("pay")
    state = json.loads(first["requestState"].removeprefix("mrtr.q1:"))
    for count in ("x", None, [1], 1.5, float("inf"), True):
        forged = "mrtr.q1:" + json.dumps({**state, "r": {"ask1": [count, None]}})
        with caplog.at_level(logging.ERROR):
            again = await wire.result(
                "pay", responses={"ask1": accept(value="not a bool")}, state=forged
            )
        assert again["resultType"] == "input_required", (count, again)
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []


async def test_declined_and_cancelled_types_are_exported() -> None:
    assert DeclinedElicitation().action == "decline"
    assert CancelledElicitation().action == "cancel"


async def test_a_round_span_carries_the_asked_keys_and_the_state_size() -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    runs = Runs()
    first = await Wire(provisioner(runs, tracer_provider=provider)).result(
        "provision", {"name": "db"}
    )
    (span,) = [s for s in exporter.get_finished_spans() if "tools/call" in s.name]
    assert span.attributes is not None
    assert list(span.attributes["mrtr.mcpserver.asked_keys"]) == ["ask_region", "ask_confirm"]  # type: ignore[arg-type]
    # the plaintext state (what max_state_bytes bounds), before sealing makes it longer
    plain = span.attributes["mrtr.mcpserver.state_bytes"]
    assert isinstance(plain, int) and 0 < plain < len(first["requestState"])


async def test_a_flood_of_unasked_answers_is_logged_bounded(
    caplog: pytest.LogCaptureFixture,
) -> None:
    wire = Wire(provisioner(Runs()))
    flood = {f"k{i:05d}" + "x" * 500: accept(region="r") for i in range(2000)}
    with caplog.at_level(logging.WARNING, "mrtr.server.mcpserver"):
        again = await wire.result("provision", {"name": "db"}, responses=flood)
    assert list(again["inputRequests"]) == ["ask_region", "ask_confirm"]
    (record,) = [r for r in caplog.records if "without the engine's state" in r.getMessage()]
    assert "2000 answer(s)" in record.getMessage()
    assert len(record.getMessage()) < 2000  # ten keys, each cut to 64 characters


async def test_a_forged_state_on_an_unsealed_server_counts_as_no_progress() -> None:
    from mrtr.server import UNSEALED

    runs = Runs()
    app = provisioner(runs, request_state_security=UNSEALED, allow_unsealed_answers=True)
    wire = Wire(app)
    for forged in ("mrtr.q1:" + "[" * 100_000, "mrtr.q1:{not json", "mrtr.q1:[1,2]"):
        again = await wire.result(
            "provision", {"name": "db"}, responses={"ask_region": accept(region="x")}, state=forged
        )
        assert list(again["inputRequests"]) == ["ask_region", "ask_confirm"]


async def test_a_resolver_may_not_key_its_own_question_elsewhere() -> None:
    app = MCPServer("keyed")

    class Region(BaseModel):
        region: str

    async def ask_region() -> Elicit[Region]:
        return Elicit("Which region?", Region, key="region")  # ignored before: refused now

    async def ask_size() -> Sample:
        return Sample("How big?", max_tokens=5, key="ask_size")  # its own key: fine

    @app.tool()
    async def provision(region: Annotated[Region, Resolve(ask_region)]) -> str:
        return region.region

    @app.tool()
    async def size(said: Annotated[CreateMessageResult, Resolve(ask_size)]) -> str:
        return said.model

    @app.tool()
    async def renamed(region: Annotated[Region, Resolve(ask_region, key="region")]) -> str:
        return region.region

    async with app.test_client(answers={"region": {"region": "eu"}}) as client:
        refused = await client.call_tool("provision")
        assert refused.result["isError"] is True
        assert isinstance(refused.exception, TypeError)
        assert refused.why is not None
        assert "resolver 'ask_region' returned Elicit(..., key='region')" in refused.why
        assert "Resolve(ask_region, key='region')" in refused.why
        done = await client.call_tool("renamed")  # the key given where it is used
        assert done.result["content"][0]["text"] == "eu"
    said = {"role": "assistant", "content": {"type": "text", "text": "big"}, "model": "m"}
    sampled = app.test_client(answers={"ask_size": said})
    async with sampled as client:
        assert (await client.call_tool("size")).asked == [["ask_size"], []]
