"""mrtr's client against mrtr's own task server (`MCPServer` with a task store), end to end."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import pytest
from pydantic import BaseModel

from mrtr import Client, Task, TaskPolling
from mrtr.client import ClientRequestContext
from mrtr.errors import MCPError, TaskFailedError
from mrtr.server import AcceptedElicitation, Context, Elicit, MCPServer, MemoryTaskStore
from mrtr.types import ElicitResult

pytestmark = pytest.mark.anyio

FAST = TaskPolling(min_interval=0.001, max_interval=0.01, initial_interval=0.001)


class Ok(BaseModel):
    ok: bool


def build() -> tuple[MCPServer, dict[str, int]]:
    app = MCPServer("tasked", task_store=MemoryTaskStore())
    runs = {"confirm": 0}

    @app.tool(task="optional")
    async def quick(label: str = "x") -> str:
        return f"quick {label}"

    @app.tool(task="required")
    async def only_task() -> str:
        return "tasked"

    @app.tool(task="optional")
    async def confirm(ctx: Context) -> str:
        runs["confirm"] += 1
        answer = await ctx.ask(Elicit("Sure?", Ok, key="sure"))
        assert isinstance(answer, AcceptedElicitation)
        return f"ok={answer.data.ok}"

    @app.tool(task="optional")
    async def crashes() -> str:
        raise MCPError(-32603, "the job crashed")

    return app, runs


async def yes(ctx: ClientRequestContext, params: Any) -> ElicitResult:
    assert ctx.task_id is not None and ctx.key == "sure"
    return ElicitResult(action="accept", content={"ok": True})


async def test_a_tasked_call_with_a_question_midway_returns_the_final_result() -> None:
    app, runs = build()
    async with Client(app, tasks=True, task_polling=FAST, elicitation_callback=yes) as client:
        result = await client.call_tool("confirm")
        assert result.content[0].text == "ok=True"  # type: ignore[union-attr]
        quick = await client.call_tool("quick", {"label": "q"})
        assert quick.content[0].text == "quick q"  # type: ignore[union-attr]
    assert runs["confirm"] >= 1


async def test_a_required_task_tool_needs_the_opt_in() -> None:
    app, _ = build()
    async with Client(app, task_polling=FAST) as client:
        with pytest.raises(MCPError) as refused:
            await client.call_tool("only_task")
        assert refused.value.code == -32021
        done = await client.call_tool("only_task", tasks=True)
        assert done.content[0].text == "tasked"  # type: ignore[union-attr]


async def test_a_task_that_fails_is_a_task_failed_error() -> None:
    app, _ = build()
    async with Client(app, tasks=True, task_polling=FAST) as client:
        with pytest.raises(TaskFailedError) as failed:
            await client.call_tool("crashes")
    assert failed.value.code == -32603


@asynccontextmanager
async def over_http(app: MCPServer) -> AsyncIterator[httpx.AsyncClient]:
    asgi = app.streamable_http_app()
    assert app.server.tasks is not None
    async with (
        app.server.tasks.lifespan(),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=asgi)) as http,  # type: ignore[arg-type]
    ):
        yield http


async def test_over_http_every_request_about_a_task_names_it() -> None:
    # the server refuses a tasks/* request whose Mcp-Name is not its taskId (-32020)
    app, _ = build()
    async with (
        over_http(app) as http,
        Client(
            "http://127.0.0.1/mcp",
            http_client=http,
            tasks=True,
            task_polling=FAST,
            elicitation_callback=yes,
        ) as client,
    ):
        result = await client.call_tool("confirm")
    assert result.content[0].text == "ok=True"  # type: ignore[union-attr]


async def test_a_handle_saved_by_one_client_is_finished_by_another() -> None:
    app, _ = build()
    async with over_http(app) as http:
        # answered by hand, so the capability is declared by hand (no callback to derive it)
        manual: dict[str, Any] = {"elicitation": {"form": {}}}
        async with Client("http://127.0.0.1/mcp", http_client=http, capabilities=manual) as first:
            task = await first.session.call_tool("confirm", allow_task=True)
            assert isinstance(task, Task)
            saved = (await task.wait(first, polling=FAST)).to_json()
        async with Client("http://127.0.0.1/mcp", http_client=http) as second:
            task = Task.from_json(saved)
            assert list(task.requests) == ["sure"]
            no = {"action": "accept", "content": {"ok": False}}
            task = await task.answer(second, {"sure": no})
            with anyio.fail_after(10):
                result = await task.result(second, polling=FAST)
    assert result.content[0].text == "ok=False"  # type: ignore[union-attr]


async def test_a_status_notification_on_a_listen_stream_ends_the_wait_early() -> None:
    app = MCPServer("gates", task_store=MemoryTaskStore())
    go, made, done = anyio.Event(), anyio.Event(), anyio.Event()
    ids: list[str] = []

    @app.tool(task="required")
    async def gated() -> str:
        await go.wait()
        return "through"

    def seen(task: Task) -> None:
        ids.append(task.id)
        made.set()

    once_a_minute = TaskPolling(min_interval=60, max_interval=60)  # unless woken
    results: list[Any] = []
    async with (
        Client(app, tasks=True, task_polling=once_a_minute, on_task=seen) as client,
        anyio.create_task_group() as tg,
    ):

        async def call() -> None:
            results.append(await client.call_tool("gated"))
            done.set()

        tg.start_soon(call)
        await made.wait()
        async with client.listen(task_ids=[ids[0]]) as subscription:
            assert subscription.honored is not None
            assert subscription.honored.task_ids == (ids[0],)
            go.set()
            with anyio.fail_after(10):  # far less than the minute between polls
                await done.wait()
    assert results[0].content[0].text == "through"


async def test_task_wait_by_hand_also_wakes_on_a_status_notification() -> None:
    app = MCPServer("gates", task_store=MemoryTaskStore())
    go = anyio.Event()

    @app.tool(task="required")
    async def gated() -> str:
        await go.wait()
        return "through"

    async with Client(app) as client:
        task = await client.session.call_tool("gated", allow_task=True)
        assert isinstance(task, Task)
        async with client.listen(task_ids=[task.id]):
            go.set()
            with anyio.fail_after(10):  # far less than the minute between polls
                done = await task.wait(
                    client, polling=TaskPolling(min_interval=60, max_interval=60)
                )
    assert done.state == "completed"


async def test_questions_before_the_task_are_rounds_and_after_it_are_the_tasks() -> None:
    from typing import Annotated

    from mrtr.server import Resolve

    app = MCPServer("composed", task_store=MemoryTaskStore())

    class Name(BaseModel):
        name: str

    async def ask_name() -> Elicit[Name]:
        return Elicit("Your name?", Name)

    @app.tool(task="required")
    async def greet(ctx: Context, who: Annotated[Name, Resolve(ask_name, key="who")]) -> str:
        go = await ctx.ask(Elicit(f"Greet {who.name}?", Ok, key="go"))
        ok = isinstance(go, AcceptedElicitation) and go.data.ok
        return f"Hello, {who.name}!" if ok else "..."

    asked: list[tuple[str | None, int | None, bool]] = []

    async def answer(ctx: ClientRequestContext, params: Any) -> ElicitResult:
        asked.append((ctx.key, ctx.round, ctx.task_id is not None))
        if ctx.key == "who":
            return ElicitResult(action="accept", content={"name": "Ada"})
        return ElicitResult(action="accept", content={"ok": True})

    async with Client(app, tasks=True, task_polling=FAST, elicitation_callback=answer) as c:
        result = await c.call_tool("greet")
    assert result.content[0].text == "Hello, Ada!"  # type: ignore[union-attr]
    # the resolver's question is a round of the call; the body's is the task's
    assert asked == [("who", 1, False), ("go", 2, True)]
