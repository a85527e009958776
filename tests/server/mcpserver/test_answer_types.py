"""Typed answers are held to the schema the client was shown, not to pydantic's lax mode."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import logging
import math
from typing import Any, Literal

import anyio
import pytest
from pydantic import BaseModel, ConfigDict, Field

from mrtr.server import AcceptedElicitation, Context, Elicit, MCPServer

from ._drive import Wire, accept, text_of

pytestmark = pytest.mark.anyio


class Size(enum.Enum):
    SMALL = 1
    LARGE = 2


class Booking(BaseModel):
    day: datetime.date
    at: datetime.datetime | None = None
    seats: int = Field(ge=1, le=8)
    name: str = Field(min_length=1, max_length=20)
    extras: list[Literal["tea", "cake"]] = []


def asker(schema: Any, **options: Any) -> tuple[MCPServer, list[Any]]:
    app = MCPServer("typed")
    read: list[Any] = []

    @app.tool()
    async def ask(ctx: Context) -> str:
        answer = await ctx.ask(Elicit("?", schema, **options))
        assert isinstance(answer, AcceptedElicitation)
        read.append(answer.data)
        return "ok"

    return app, read


async def answer(app: MCPServer, content: dict[str, Any]) -> dict[str, Any]:
    wire = Wire(app)
    first = await wire.result("ask")
    return await wire.result(
        "ask", responses={"ask1": accept(**content)}, state=first["requestState"]
    )


CASES: list[tuple[Any, list[Any], list[Any]]] = [
    (float, ["nan", "NaN", math.nan, math.inf, -math.inf, "12.5", True, 10**400], [12.5, 3]),
    (bool, ["yes", "off", "true", 1, 0, 1.0], [True, False]),
    (int, [True, "12", 12.5, math.nan, "0x10"], [12, 12.0, -3]),
    (str, [5, True, 1.5, ["a"]], ["five", ""]),
    (Literal["red", "blue"], ["green", 1, "RED"], ["red"]),
    (Literal[1, 2], [True, "1", 3], [1, 2.0]),
    (Size, [True, "1", 3, "SMALL"], [2]),
]


@pytest.mark.parametrize(("schema", "bad", "good"), CASES)
async def test_a_scalar_answer_outside_its_advertised_type_is_refused(
    schema: Any, bad: list[Any], good: list[Any]
) -> None:
    for value in bad:
        app, read = asker(schema)
        result = await answer(app, {"value": value})
        assert result["isError"] is True, (schema, value)
        message = text_of(result)
        assert "does not match the requested schema (value: " in message, message
        assert read == []
    for value in good:
        app, read = asker(schema)
        result = await answer(app, {"value": value})
        assert text_of(result) == "ok", (schema, value, text_of(result))
        assert read == [schema(value) if isinstance(schema, type) else value]


@pytest.mark.parametrize(
    ("content", "field", "reason"),
    [
        ({"day": "1700000000", "seats": 2, "name": "a"}, "day", "expected a date"),
        ({"day": 20240101, "seats": 2, "name": "a"}, "day", "expected a string"),
        ({"day": "2024-02-30", "seats": 2, "name": "a"}, "day", "expected a date"),
        ({"day": "2024-01-01", "at": "1700000000", "seats": 2, "name": "a"}, "at", "date-time"),
        ({"day": "2024-01-01", "seats": 9, "name": "a"}, "seats", "more than 8"),
        ({"day": "2024-01-01", "seats": True, "name": "a"}, "seats", "expected an integer"),
        ({"day": "2024-01-01", "seats": 2, "name": ""}, "name", "shorter than 1"),
        ({"day": "2024-01-01", "seats": 2, "name": "a", "extras": ["pie"]}, "extras", "choices"),
        ({"day": "2024-01-01", "seats": 2, "name": "a", "extras": "tea"}, "extras", "a list"),
        ({"day": "2024-01-01", "seats": 2}, "name", "missing"),
    ],
)
async def test_a_model_answer_is_held_to_each_advertised_field(
    content: dict[str, Any], field: str, reason: str
) -> None:
    app, read = asker(Booking)
    result = await answer(app, content)
    assert result["isError"] is True
    assert f"({field}: " in text_of(result) and reason in text_of(result), text_of(result)
    assert read == []


async def test_a_model_answer_that_fits_is_read() -> None:
    app, read = asker(Booking)
    content = {
        "day": "2024-02-29",
        "at": "2024-02-29T18:30:00+01:00",
        "seats": 8,
        "name": "Ada",
        "extras": ["cake"],
    }
    assert text_of(await answer(app, content)) == "ok"
    (booking,) = read
    assert booking.day == datetime.date(2024, 2, 29) and booking.extras == ["cake"]
    assert booking.at.utcoffset() == datetime.timedelta(hours=1)
    app, read = asker(Booking)  # a form's local time: the type reads it naive
    local = {**content, "at": "2024-02-29T18:30"}
    assert text_of(await answer(app, local)) == "ok"
    assert read[0].at == datetime.datetime(2024, 2, 29, 18, 30)


async def test_an_invalid_answer_can_be_given_again_with_reask() -> None:
    app, read = asker(float, on_invalid="reask")
    wire = Wire(app)
    first = await wire.result("ask")
    again = await wire.result(
        "ask", responses={"ask1": accept(value="nan")}, state=first["requestState"]
    )
    message = again["inputRequests"]["ask1"]["params"]["message"]
    assert message == "?\n\nThe previous answer was not valid (value); try again."
    done = await wire.result(
        "ask", responses={"ask1": accept(value=101.5)}, state=again["requestState"]
    )
    assert text_of(done) == "ok" and read == [101.5]


async def test_many_bad_fields_make_a_bounded_error_note_and_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Strict(BaseModel):
        model_config = ConfigDict(extra="forbid")
        ok: bool

    flood = {f"field{i:05d}" + "x" * 1000: True for i in range(5000)}
    app, _ = asker(Strict)
    result = await answer(app, {"ok": True, **flood})
    assert result["isError"] is True
    assert "field00000" in text_of(result) and len(text_of(result)) < 2000
    app, _ = asker(Strict, on_invalid="reask")
    wire = Wire(app)
    first = await wire.result("ask")
    with caplog.at_level(logging.WARNING, "mrtr.server.mcpserver"):
        again = await wire.result(
            "ask", responses={"ask1": accept(ok=True, **flood)}, state=first["requestState"]
        )
    message = again["inputRequests"]["ask1"]["params"]["message"]
    assert "field00000" in message and len(message) < 2000
    (record,) = [r for r in caplog.records if "did not validate" in r.getMessage()]
    assert len(record.getMessage()) < 2000


@dataclasses.dataclass
class Seats:
    count: int
    window: bool = False


async def test_a_dataclass_answer_is_held_to_its_schema_too() -> None:
    app, read = asker(Seats)
    refused = await answer(app, {"count": "2", "window": "yes"})
    assert "(count: expected an integer; window: expected true or false)" in text_of(refused)
    app, read = asker(Seats)
    assert text_of(await answer(app, {"count": 2, "window": True})) == "ok"
    assert read == [Seats(2, True)]


async def test_an_answer_over_the_legacy_back_channel_is_held_to_its_schema() -> None:
    from mrtr import Client
    from mrtr.types import ElicitResult

    async def nan(ctx: Any, params: Any) -> ElicitResult:
        return ElicitResult(action="accept", content={"value": "nan"})

    app, read = asker(float)
    with anyio.fail_after(30):
        async with Client(app, mode="legacy", elicitation_callback=nan) as client:
            result = await client.call_tool("ask")
    assert result.is_error is True
    assert "(value: expected a finite number)" in result.content[0].text  # type: ignore[union-attr]
    assert read == []
