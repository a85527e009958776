"""Servers the inspector's tests look at (importable: an exported test imports them)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel

from mrtr.server import (
    Context,
    Elicit,
    ElicitationResult,
    ElicitUrl,
    ListRoots,
    MCPServer,
    RequestStateSecurity,
    Resolve,
    Sample,
)


class Region(BaseModel):
    region: Literal["eu-west-1", "us-east-1"]


def build_deployer() -> MCPServer:
    """A tool that asks twice; the sealed state is re-sealed every round."""
    app = MCPServer("deployer")

    async def ask_region(name: str) -> Elicit[Region]:
        return Elicit(f"Which region for {name!r}?", Region)

    async def ask_go(region: Annotated[Region, Resolve(ask_region)]) -> Elicit[bool]:
        return Elicit(f"Deploy to {region.region}?", bool)

    @app.tool(description="Deploy a service (asks where, then asks to confirm).")
    async def deploy(
        name: str,
        region: Annotated[Region, Resolve(ask_region)],
        go: Annotated[ElicitationResult[bool], Resolve(ask_go)],
    ) -> str:
        return f"{name} -> {region.region}" if go.action == "accept" and go.data else "stopped"

    return app


HOSTILE_TEXT = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
HOSTILE_URL = "javascript:window.__pwned = 3"


def build_hostile() -> MCPServer:
    """A server whose every string tries to run in the inspector's page."""
    app = MCPServer("<b>hostile</b>", version='"><script>window.__pwned=4</script>')

    @app.tool(name="<img src=x onerror=window.__pwned=5>", description=HOSTILE_TEXT)
    async def trap(ctx: Context) -> str:
        await ctx.ask(ElicitUrl(HOSTILE_TEXT, HOSTILE_URL, key="visit"))
        return HOSTILE_TEXT

    return app


deployer = build_deployer()
hostile = build_hostile()

SIGN_IN_URL = "https://auth.example.com/flow?session=42"


def build_signin() -> MCPServer:
    """A tool that sends the person to a web page (URL-mode elicitation) and goes on after."""
    app = MCPServer("signin")

    @app.tool(description="Connect an account (asks you to sign in on its site).")
    async def connect(ctx: Context) -> str:
        answer = await ctx.ask(ElicitUrl("Sign in to Acme", SIGN_IN_URL, key="signin"))
        return "connected" if answer.action == "accept" else f"not connected ({answer.action})"

    return app


signin = build_signin()


class Clock:
    """A wall clock the test moves (the state's expiry is checked against it)."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def build_expiring(clock: Clock) -> MCPServer:
    """A server whose sealed state lives 30 s: an answer given later is refused."""
    security = RequestStateSecurity(keys=[b"inspect-tests-key-of-32-bytes!!!"], ttl=30, clock=clock)
    app = MCPServer("expiring", request_state_security=security)

    async def ask_ok() -> Elicit[bool]:
        return Elicit("Go ahead?", bool)

    @app.tool()
    async def slow(ok: Annotated[bool, Resolve(ask_ok)]) -> str:
        return "done" if ok else "stopped"

    return app


def build_assistant() -> MCPServer:
    """A tool that asks the client's model and its roots in one round."""
    app = MCPServer("assistant")

    @app.tool(description="Summarise the workspace.")
    async def summarise(ctx: Context) -> str:
        said, roots = await ctx.ask_all(
            Sample("Summarise the workspace", max_tokens=50, key="model"),
            ListRoots(key="roots"),
        )
        text = said.content.text if said.content.type == "text" else "?"
        return f"{text} [{', '.join(str(r.uri) for r in roots.roots)}]"

    return app


assistant = build_assistant()


def build_library() -> MCPServer:
    """A prompt, a resource and a template that asks before it answers."""
    app = MCPServer("library")

    @app.prompt(description="Greet someone.")
    def greet(who: str) -> str:
        return f"Hello, {who}!"

    @app.resource("note://readme", description="The readme.")
    def readme() -> str:
        return "read me"

    async def ask_ok() -> Elicit[bool]:
        return Elicit("Open the secret note?", bool)

    @app.resource("note://{name}", description="A note by name.")
    def note(name: str, ok: Annotated[bool, Resolve(ask_ok)]) -> str:
        return f"note {name}" if ok else "closed"

    return app


library = build_library()


def build_chatty() -> MCPServer:
    """A tool that logs, reports progress and changes its tool list."""
    app = MCPServer("chatty")

    @app.tool()
    async def work(ctx: Context) -> str:
        await ctx.info("<b>starting</b>")
        await ctx.report_progress(1, 2, "half")
        await ctx.notify_tools_changed()
        return "worked"

    return app


chatty = build_chatty()


class Ok(BaseModel):
    ok: bool


def build_tasked() -> MCPServer:
    """A tool that runs as a task and asks a question midway (the tasks extension)."""
    from mrtr.server import MemoryTaskStore

    app = MCPServer("tasked", task_store=MemoryTaskStore())

    @app.tool(task="optional")
    async def confirm(ctx: Context) -> str:
        answer = await ctx.ask(Elicit("Sure?", Ok, key="sure"))
        return f"ok={answer.data.ok}" if answer.action == "accept" else "no"

    return app
