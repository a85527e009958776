"""Every dependency that cannot be honoured is InvalidSignature at decoration, not mid-call."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Optional

import pytest
from pydantic import BaseModel

from mrtr.server import (
    UNSEALED,
    Context,
    Elicit,
    InvalidSignature,
    ListRoots,
    MCPServer,
    Resolve,
    Sample,
)
from mrtr.types import InputRequiredResult


class Address(BaseModel):
    street: str


class Nested(BaseModel):
    address: Address


class Flat(BaseModel):
    city: str


async def ask_flat() -> Elicit[Flat]:
    return Elicit("City?", Flat)


def test_resolve_with_a_declared_input_required_return() -> None:
    app = MCPServer("t")
    with pytest.raises(InvalidSignature, match="combines Resolve"):

        @app.tool()
        async def t(city: Annotated[Flat, Resolve(ask_flat)]) -> str | InputRequiredResult:
            return "x"


def test_unresolvable_resolver_parameter() -> None:
    async def r(mystery: int) -> int:
        return mystery

    app = MCPServer("t")
    with pytest.raises(InvalidSignature, match="parameter 'mystery' cannot be resolved"):

        @app.tool()
        async def t(x: Annotated[int, Resolve(r)]) -> int:
            return x


def test_resolver_parameters_may_be_context_nested_or_arguments_by_name() -> None:
    async def base(name: str, ctx: Context) -> str:
        return name

    async def top(b: Annotated[str, Resolve(base)], name: str) -> str:
        return b + name

    app = MCPServer("t")

    @app.tool()
    async def t(name: str, x: Annotated[str, Resolve(top)]) -> str:
        return x

    plan = app.spec.registry.tools["t"].spec.plan
    assert plan is not None
    assert [[n.key for n in layer] for layer in plan.layers] == [["base"], ["top"]]


def test_cycle() -> None:
    async def r1(x: Annotated[int, Resolve(lambda: 0)]) -> int:  # replaced below
        return x

    async def a(b: Annotated[int, Resolve(bb)]) -> int:
        return b

    async def bb(a_: Annotated[int, Resolve(a)]) -> int:
        return a_

    a.__annotations__["b"] = Annotated[int, Resolve(bb)]
    app = MCPServer("t")
    with pytest.raises(InvalidSignature, match="cyclic dependency"):

        @app.tool()
        async def t(x: Annotated[int, Resolve(a)]) -> int:
            return x


def test_resolve_inside_a_union() -> None:
    app = MCPServer("t")
    with pytest.raises(InvalidSignature, match="wraps `Resolve"):

        @app.tool()
        async def t(x: Optional[Annotated[Flat, Resolve(ask_flat)]] = None) -> str:  # noqa: UP045
            return "x"


def test_several_question_arms() -> None:
    async def r() -> Elicit[Flat] | Sample:
        return Elicit("City?", Flat)

    app = MCPServer("t")
    with pytest.raises(InvalidSignature, match="multiple Elicit/Sample/ListRoots arms"):

        @app.tool()
        async def t(x: Annotated[Flat, Resolve(r)]) -> str:
            return "x"


def test_roots_and_sample_arms_alone_are_fine() -> None:
    async def roots() -> ListRoots:
        return ListRoots()

    app = MCPServer("t")

    @app.tool()
    async def t(x: Annotated[object, Resolve(roots)]) -> str:
        return "x"


@pytest.mark.parametrize("bad", [Nested, dict, list[str]])
def test_a_question_type_the_form_cannot_carry(bad: type) -> None:
    async def r() -> Elicit[bad]:  # type: ignore[valid-type]
        return Elicit("?", bad)

    app = MCPServer("t")
    with pytest.raises(InvalidSignature):

        @app.tool()
        async def t(x: Annotated[object, Resolve(r)]) -> str:
            return "x"

    with pytest.raises(InvalidSignature):
        Elicit("?", bad)


def test_nested_model_names_the_field() -> None:
    with pytest.raises(InvalidSignature, match="field 'address'"):
        Elicit("?", Nested)


def test_dataclass_typeddict_and_scalars_render() -> None:
    from typing import Literal

    from typing_extensions import TypedDict

    @dataclass
    class D:
        n: int

    class T(TypedDict):
        flag: bool

    for kind in (D, T, bool, int, float, str, Literal["a", "b"]):
        assert Elicit("?", kind).form.schema["type"] == "object"


def test_keys_are_names_and_unique_per_handler() -> None:
    def make(name: str) -> object:
        async def r() -> Elicit[Flat]:
            return Elicit("?", Flat)

        r.__name__ = name
        r.__qualname__ = f"module_{name}.r"
        return r

    one, two = make("ask"), make("ask")
    app = MCPServer("t")
    with pytest.raises(InvalidSignature, match="share the question key 'ask'"):

        @app.tool()
        async def t(
            a: Annotated[Flat, Resolve(one)],  # type: ignore[arg-type]
            b: Annotated[Flat, Resolve(two)],  # type: ignore[arg-type]
        ) -> str:
            return "x"

    @app.tool()
    async def fine(
        a: Annotated[Flat, Resolve(one)],  # type: ignore[arg-type]
        b: Annotated[Flat, Resolve(two, key="ask_again")],  # type: ignore[arg-type]
    ) -> str:
        return "x"

    plan = app.spec.registry.tools["fine"].spec.plan
    assert plan is not None and sorted(n.key for n in plan.nodes) == ["ask", "ask_again"]


def test_resolvers_on_prompts_and_templates_are_wired_not_advertised() -> None:
    app = MCPServer("t")

    async def ask_topic(year: str) -> Elicit[Flat]:
        return Elicit(f"Topic for {year}?", Flat)

    @app.prompt()
    async def p(year: str, topic: Annotated[Flat, Resolve(ask_topic)]) -> str:
        return topic.city

    @app.resource("r://{year}")
    async def r(year: str, topic: Annotated[Flat, Resolve(ask_topic)]) -> str:
        return topic.city

    assert [a.name for a in app.spec.registry.prompts["p"].definition().arguments or []] == ["year"]
    assert app.spec.registry.templates["r://{year}"].spec.plan is not None


def test_a_resolver_taking_an_argument_the_handler_lacks() -> None:
    async def needs_year(year: str) -> str:
        return year

    app = MCPServer("t")
    with pytest.raises(InvalidSignature, match="argument of resource"):

        @app.resource("r://static")
        async def r(x: Annotated[str, Resolve(needs_year)]) -> str:
            return x


def test_template_variables_must_match_the_arguments() -> None:
    app = MCPServer("t")
    with pytest.raises(InvalidSignature, match="URI variables"):

        @app.resource("r://{name}")
        async def r(other: str) -> str:
            return other


def test_resolvers_on_an_unsealed_server_need_consent() -> None:
    app = MCPServer("t", request_state_security=UNSEALED)
    with pytest.raises(InvalidSignature, match="UNSEALED"):

        @app.tool()
        async def t(x: Annotated[Flat, Resolve(ask_flat)]) -> str:
            return "x"

    allowed = MCPServer("t", request_state_security=UNSEALED, allow_unsealed_answers=True)

    @allowed.tool()
    async def t2(x: Annotated[Flat, Resolve(ask_flat)]) -> str:
        return "x"


def test_star_args_are_refused() -> None:
    app = MCPServer("t")
    with pytest.raises(InvalidSignature, match=r"\*args"):

        @app.tool()
        async def t(*args: int) -> str:
            return "x"
