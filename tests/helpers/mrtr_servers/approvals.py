"""Approvals: a server whose tools ask, for the paused-call tests (in process, or not).

``approve``: round 1 asks an approval (elicitation) and the roots together; round 2 asks a
confirmation; then it completes with what it was told. ``once``: one question, then done.
Every leg that carries answers is counted per ``n`` argument, so tests can check that a
call was retried exactly once (``counts`` returns the tallies as JSON).

Subprocess: ``python -m tests.helpers.mrtr_servers.approvals http|stdio [--keys HEX,...]
[--name NAME] [--redis URL]``; over HTTP it prints ``READY <url>``. ``--keys`` and
``--redis`` are `sealing`'s: ``--redis`` makes every state single-use, with the nonces in
that Redis (shared by every instance given the same URL).
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from typing import Any

from mrtr.server import RequestStateSecurity, Server, ServerRequestContext
from mrtr.types import (
    CallToolRequestParams,
    CallToolResult,
    ElicitResult,
    GetPromptRequestParams,
    GetPromptResult,
    InputRequiredResult,
    ListRootsRequest,
    ListRootsResult,
    PromptMessage,
    ReadResourceRequestParams,
    ReadResourceResult,
    TextContent,
    TextResourceContents,
)
from tests.helpers.builders import ask, text
from tests.helpers.mrtr_servers import sealing, serve


def _content(reply: Any, field: str) -> str | None:
    if isinstance(reply, ElicitResult) and reply.content is not None:
        return str(reply.content.get(field))
    return None


class Tally:
    """Answered legs per call (``n``), and the request states each retry echoed."""

    def __init__(self) -> None:
        self.retries: Counter[str] = Counter()
        self.states: list[str] = []


def make_server(
    name: str = "Approvals", *, security: RequestStateSecurity | None = None
) -> tuple[Server, Tally]:
    tally = Tally()

    async def call_tool(
        ctx: ServerRequestContext, params: CallToolRequestParams
    ) -> CallToolResult | InputRequiredResult:
        args = params.arguments or {}
        responses = ctx.input_responses or {}
        if responses:
            tally.retries[str(args.get("n", "-"))] += 1
            if ctx.request_state is not None:
                tally.states.append(ctx.request_state)
        if params.name == "counts":
            return text(json.dumps(dict(tally.retries)))
        if params.name == "once":
            who = _content(responses.get("ok"), "ok")
            if who is None:
                return InputRequiredResult(
                    input_requests={"ok": ask("ok", "Approve?")}, request_state="once"
                )
            return text(f"once n={args.get('n')} ok={who}")
        # approve: round 1 (approval + roots), round 2 (confirm)
        state = ctx.request_state
        if state is None:
            return InputRequiredResult(
                input_requests={
                    "approval": ask("approval", "Approve?"),
                    "roots": ListRootsRequest(),
                },
                request_state="r1",
            )
        if state == "r1":
            approval = _content(responses.get("approval"), "approval")
            roots = responses.get("roots")
            uris = (
                ",".join(str(r.uri) for r in roots.roots)
                if isinstance(roots, ListRootsResult)
                else ""
            )
            return InputRequiredResult(
                input_requests={"confirm": ask("confirm", "Sure?")},
                request_state=json.dumps({"approval": approval, "roots": uris}),
            )
        seen = json.loads(state)
        confirm = _content(responses.get("confirm"), "confirm")
        return text(f"approval={seen['approval']} roots={seen['roots']} confirm={confirm}")

    async def get_prompt(
        ctx: ServerRequestContext, params: GetPromptRequestParams
    ) -> GetPromptResult | InputRequiredResult:
        who = _content((ctx.input_responses or {}).get("audience"), "audience")
        if who is None:
            return InputRequiredResult(input_requests={"audience": ask("audience", "Who?")})
        message = PromptMessage(role="user", content=TextContent(type="text", text=f"for {who}"))
        return GetPromptResult(messages=[message])

    async def read_resource(
        ctx: ServerRequestContext, params: ReadResourceRequestParams
    ) -> ReadResourceResult | InputRequiredResult:
        detail = _content((ctx.input_responses or {}).get("detail"), "detail")
        if detail is None:
            return InputRequiredResult(
                input_requests={"detail": ask("detail", "How detailed?")}, request_state="rd"
            )
        contents = TextResourceContents(uri=str(params.uri), text=f"{detail} notes")
        return ReadResourceResult(contents=[contents])

    server = Server(
        name,
        version="2.0.0",
        on_call_tool=call_tool,
        on_get_prompt=get_prompt,
        on_read_resource=read_resource,
        request_state_security=security,
    )
    return server, tally


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("transport", choices=["http", "stdio"])
    parser.add_argument("--keys", default="")
    parser.add_argument("--name", default="Approvals")
    parser.add_argument("--redis", default="")
    args = parser.parse_args()
    server, _ = make_server(args.name, security=sealing(args.keys, redis_url=args.redis))
    serve(server, args.transport)


if __name__ == "__main__":
    main()
