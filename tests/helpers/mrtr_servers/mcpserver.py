"""An mrtr `MCPServer` with the parity cases, for other clients to drive.

``python -m tests.helpers.mrtr_servers.mcpserver stdio`` serves one client over stdio;
``... http`` serves streamable HTTP on 127.0.0.1 and prints ``READY <url>``. The
official SDK's client drives it in ``tests/interop/test_official_mcpserver.py``.
"""

from __future__ import annotations

import itertools
import sys
from typing import Annotated

from pydantic import BaseModel

from mrtr.server import (
    AcceptedElicitation,
    Context,
    Elicit,
    ElicitationResult,
    ListRoots,
    MCPServer,
    Resolve,
    Sample,
)
from mrtr.types import (
    CreateMessageResult,
    ElicitResult,
    InputRequiredResult,
    ListRootsResult,
    TextContent,
)
from tests.helpers.builders import ASK_AUDIENCE
from tests.helpers.mrtr_servers import serve


class Region(BaseModel):
    region: str


class Confirm(BaseModel):
    ok: bool


def build() -> MCPServer:
    app = MCPServer("mrtr-mcpserver", version="1.0.0")
    clock = itertools.count()

    async def ask_region(name: str) -> Region | Elicit[Region]:
        return Elicit(f"Which region for {name!r}?", Region)

    async def ask_confirm(name: str) -> Elicit[Confirm]:
        return Elicit(f"Really provision {name!r}?", Confirm)

    @app.tool()
    async def provision(
        name: str,
        region: Annotated[Region, Resolve(ask_region)],
        confirm: Annotated[ElicitationResult[Confirm], Resolve(ask_confirm)],
    ) -> str:
        """Provision a database; asks where, and whether."""
        if not isinstance(confirm, AcceptedElicitation) or not confirm.data.ok:
            return f"not provisioned ({confirm.action})"
        return f"provisioned {name} in {region.region}"

    @app.tool()
    async def guarded(ctx: Context) -> str | InputRequiredResult:
        """The manual form: ask, then read the answer on the retry."""
        answer = (ctx.input_responses or {}).get("audience")
        if not isinstance(answer, ElicitResult) or answer.content is None:
            return InputRequiredResult(
                input_requests={"audience": ASK_AUDIENCE}, request_state="guarded:v1"
            )
        return f"for {answer.content['audience']} ({ctx.request_state})"

    async def summarise(topic: str) -> Sample:
        return Sample(f"Summarise {topic}", max_tokens=100)

    async def roots() -> ListRoots:
        return ListRoots()

    @app.tool()
    async def brief(
        topic: str,
        summary: Annotated[CreateMessageResult, Resolve(summarise)],
        where: Annotated[ListRootsResult, Resolve(roots)],
    ) -> str:
        """Sample the client's model and list its roots, in one round."""
        text = summary.content.text if isinstance(summary.content, TextContent) else "?"
        return f"{text} @ {', '.join(r.uri for r in where.roots)}"

    async def ask_clock() -> Elicit[Confirm]:
        return Elicit(f"Proceed at tick {next(clock)}?", Confirm)

    @app.tool()
    async def unstable(ok: Annotated[Confirm, Resolve(ask_clock)]) -> str:
        """A question built from a clock: stopped after two answers."""
        return "never"  # pragma: no cover

    @app.tool()
    async def greet(ctx: Context) -> str:
        """ctx.ask in the body, on either era."""
        who = await ctx.ask(Elicit("Your name?", str, key="name"))
        return f"hello {who.data}" if isinstance(who, AcceptedElicitation) else who.action

    async def ask_topic_audience(topic: str) -> Elicit[str]:
        return Elicit(f"Audience for {topic}?", str)

    @app.prompt()
    async def briefing(topic: str, audience: Annotated[str, Resolve(ask_topic_audience)]) -> str:
        """A prompt with a resolver."""
        return f"Write a briefing on {topic} for {audience}."

    @app.resource("report://{year}")
    async def report(year: str, ctx: Context) -> str | InputRequiredResult:
        """A template in the manual form."""
        answer = (ctx.input_responses or {}).get("audience")
        if not isinstance(answer, ElicitResult) or answer.content is None:
            return InputRequiredResult(input_requests={"audience": ASK_AUDIENCE})
        return f"report {year} for {answer.content['audience']}"

    return app


def main() -> None:
    serve(build(), sys.argv[1] if len(sys.argv) > 1 else "stdio")


if __name__ == "__main__":
    main()
