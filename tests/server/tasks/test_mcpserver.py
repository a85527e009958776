"""`MCPServer` tools with ``task=...``, driven by mrtr's own client session (in process)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

import anyio
import anyio.lowlevel
import httpx
import pytest
from pydantic import BaseModel

from mrtr.errors import MCPError
from mrtr.server import (
    AcceptedElicitation,
    Context,
    Elicit,
    MCPServer,
    MemoryTaskStore,
    Resolve,
    SqliteTaskStore,
    ToolError,
)
from mrtr.session import ClientSession
from mrtr.types import TASKS_EXTENSION

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"
WITH_TASKS: dict[str, Any] = {"elicitation": {}, "extensions": {TASKS_EXTENSION: {}}}
WITHOUT: dict[str, Any] = {"elicitation": {}}


class Name(BaseModel):
    name: str


class Ok(BaseModel):
    ok: bool


def build() -> tuple[MCPServer, dict[str, int]]:
    app = MCPServer("tasked", task_store=MemoryTaskStore())
    runs = {"body": 0, "effects": 0}

    @app.tool(task="optional")
    async def quick(label: str = "x") -> str:
        return f"quick {label}"

    @app.tool(task="required")
    async def only_task() -> str:
        return "tasked"

    @app.tool(task="optional")
    async def confirm(ctx: Context) -> str:
        runs["body"] += 1
        if ctx.once("effect"):
            runs["effects"] += 1
        answer = await ctx.ask(Elicit("Sure?", Ok, key="sure"))
        assert isinstance(answer, AcceptedElicitation)
        return f"ok={answer.data.ok}"

    async def ask_name() -> Elicit[Name]:
        return Elicit("Your name?", Name)

    @app.tool(task="required")
    async def hello(user: Annotated[Name, Resolve(ask_name, key="user_name")]) -> str:
        return f"Hello, {user.name}!"

    @app.tool(task="optional")
    async def tool_error() -> str:
        raise ToolError("no such file")

    @app.tool(task="optional")
    async def crashes() -> str:
        raise MCPError(-32603, "the job crashed")

    return app, runs


@asynccontextmanager
async def session(app: MCPServer, caps: dict[str, Any]) -> AsyncIterator[ClientSession]:
    async with (
        app.client_transport() as transport,
        ClientSession(transport, capabilities=caps) as opened,
    ):
        opened.adopt(MODERN)
        yield opened
    # a SQLite store lives as long as its server's one session here (a process, in effect)
    store = app.server.tasks.store if app.server.tasks is not None else None
    if isinstance(store, SqliteTaskStore):
        store.close()


async def until(s: ClientSession, task_id: str, *statuses: str) -> dict[str, Any]:
    with anyio.fail_after(10):
        while True:
            got = await s.send_request("tasks/get", {"taskId": task_id})
            if got["status"] in statuses:
                return got
            await anyio.lowlevel.checkpoint()


async def test_an_optional_tool_is_a_task_only_for_a_client_that_allows_one() -> None:
    app, _ = build()
    async with session(app, WITH_TASKS) as s:
        created = await s.send_request("tools/call", {"name": "quick", "arguments": {"label": "a"}})
        assert created["resultType"] == "task"
        done = await until(s, created["taskId"], "completed")
        assert done["result"]["content"][0]["text"] == "quick a"
    async with session(app, WITHOUT) as s:
        plain = await s.send_request("tools/call", {"name": "quick"})
        assert plain["resultType"] == "complete" and "taskId" not in plain


async def test_a_required_tool_refuses_a_client_without_the_extension() -> None:
    app, _ = build()
    async with session(app, WITHOUT) as s:
        with pytest.raises(MCPError) as info:
            await s.send_request("tools/call", {"name": "only_task"})
    assert info.value.code == -32021
    assert "only_task" in info.value.message
    assert info.value.data == {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}


async def test_ctx_ask_in_the_body_moves_the_task_to_input_required() -> None:
    app, runs = build()
    async with session(app, WITH_TASKS) as s:
        created = await s.send_request("tools/call", {"name": "confirm"})
        waiting = await until(s, created["taskId"], "input_required")
        assert waiting["inputRequests"]["sure"]["method"] == "elicitation/create"
        answer = {"action": "accept", "content": {"ok": True}}
        await s.send_request(
            "tasks/update", {"taskId": created["taskId"], "inputResponses": {"sure": answer}}
        )
        done = await until(s, created["taskId"], "completed")
    assert done["result"]["content"][0]["text"] == "ok=True"
    assert runs["body"] == 2  # replay style: the body ran again with the answer
    assert runs["effects"] == 1  # ctx.once: the side effect ran on the first pass only


async def test_ctx_once_holds_across_the_rounds_of_a_plain_multi_round_call() -> None:
    app, runs = build()
    async with session(app, WITHOUT) as s:
        first = await s.send_request("tools/call", {"name": "confirm"})
        assert first["resultType"] == "input_required"
        answer = {"action": "accept", "content": {"ok": True}}
        done = await s.send_request(
            "tools/call",
            {
                "name": "confirm",
                "inputResponses": {"sure": answer},
                "requestState": first["requestState"],
            },
        )
    assert done["content"][0]["text"] == "ok=True"
    assert runs == {"body": 2, "effects": 1}


async def test_resolvers_are_asked_before_the_task_is_created() -> None:
    app, _ = build()
    async with session(app, WITH_TASKS) as s:
        first = await s.send_request("tools/call", {"name": "hello"})
        assert first["resultType"] == "input_required" and "taskId" not in first
        (key,) = first["inputRequests"]
        second = await s.send_request(
            "tools/call",
            {
                "name": "hello",
                "inputResponses": {key: {"action": "accept", "content": {"name": "Alice"}}},
                "requestState": first["requestState"],
            },
        )
        assert second["resultType"] == "task" and "requestState" not in second
        done = await until(s, second["taskId"], "completed")
    assert done["result"]["content"][0]["text"] == "Hello, Alice!"


async def test_a_tool_error_completes_and_a_protocol_error_fails() -> None:
    app, _ = build()
    async with session(app, WITH_TASKS) as s:
        created = await s.send_request("tools/call", {"name": "tool_error"})
        done = await until(s, created["taskId"], "completed", "failed")
        assert done["status"] == "completed" and done["result"]["isError"] is True
        created = await s.send_request("tools/call", {"name": "crashes"})
        failed = await until(s, created["taskId"], "completed", "failed")
        assert failed["status"] == "failed"
        assert failed["error"] == {"code": -32603, "message": "the job crashed"}
        assert "result" not in failed


async def test_a_task_tool_needs_a_task_store() -> None:
    app = MCPServer("no-store")
    with pytest.raises(ValueError, match="task store"):

        @app.tool(task="optional")
        async def job() -> str:
            return "x"


async def test_over_http_an_mcp_name_header_on_tasks_must_name_the_task() -> None:
    app, _ = build()
    asgi = app.streamable_http_app()
    assert app.server.tasks is not None
    headers = {"MCP-Protocol-Version": MODERN, "Accept": "application/json, text/event-stream"}
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": WITH_TASKS,
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
    }

    def body(method: str, params: dict[str, Any]) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": meta}}

    async with (
        app.server.tasks.lifespan(),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=asgi),  # type: ignore[arg-type]
            base_url="http://127.0.0.1",
        ) as http,
    ):
        created = await http.post(
            "/mcp",
            json=body("tools/call", {"name": "quick"}),
            headers={**headers, "Mcp-Method": "tools/call", "Mcp-Name": "quick"},
        )
        task_id = created.json()["result"]["taskId"]
        get = body("tasks/get", {"taskId": task_id})
        ok = await http.post(
            "/mcp", json=get, headers={**headers, "Mcp-Method": "tasks/get", "Mcp-Name": task_id}
        )
        assert ok.json()["result"]["taskId"] == task_id
        wrong = await http.post(
            "/mcp", json=get, headers={**headers, "Mcp-Method": "tasks/get", "Mcp-Name": "other"}
        )
        assert wrong.status_code == 400 and wrong.json()["error"]["code"] == -32020
        # the conformance suite: a server must not require Mcp-Name on tasks/* (fastmcp's
        # client sends none); the body's taskId is the word
        missing = await http.post("/mcp", json=get, headers={**headers, "Mcp-Method": "tasks/get"})
        assert missing.status_code == 200 and missing.json()["result"]["taskId"] == task_id


def restartable(db: Any, effects: list[str]) -> MCPServer:
    """One process of a server whose task tool survives a restart (SQLite, shared keys)."""
    from mrtr.server import RequestStateSecurity, SqliteTaskStore

    app = MCPServer(
        "durable",
        request_state_security=RequestStateSecurity(keys=[b"k" * 32]),
        task_store=SqliteTaskStore(db),
    )

    @app.tool(task="required")
    async def deploy(target: str, ctx: Context) -> str:
        if ctx.once("build"):
            effects.append("build")
        answer = await ctx.ask(Elicit(f"Deploy to {target}?", Ok, key="go"))
        assert isinstance(answer, AcceptedElicitation)
        return f"deployed to {target}: {answer.data.ok}"

    return app


async def test_a_task_tool_resumes_after_a_restart(tmp_path: Any) -> None:
    db = tmp_path / "tasks.db"
    effects: list[Any] = []
    first = restartable(db, effects)
    async with session(first, WITH_TASKS) as s:
        created = await s.send_request(
            "tools/call", {"name": "deploy", "arguments": {"target": "prod"}}
        )
        task_id = created["taskId"]
        asked = await until(s, task_id, "input_required")
        assert list(asked["inputRequests"]) == ["go"]
    # the process is gone (its lifespan ended); another one starts on the same store
    second = restartable(db, effects)
    async with session(second, WITH_TASKS) as s:  # resumed before the first request
        again = await until(s, task_id, "input_required")
        (key,) = again["inputRequests"]
        assert key == "go~2"  # asked anew after the restart: a fresh key
        yes = {"action": "accept", "content": {"ok": True}}
        await s.send_request("tasks/update", {"taskId": task_id, "inputResponses": {key: yes}})
        done = await until(s, task_id, "completed", "failed")
    assert done["status"] == "completed", done
    assert done["result"]["content"][0]["text"] == "deployed to prod: True"
    assert effects == ["build"]  # ctx.once held across the restart


async def test_a_task_whose_tool_is_gone_after_a_restart_fails(tmp_path: Any) -> None:
    from mrtr.server import RequestStateSecurity, SqliteTaskStore

    db = tmp_path / "tasks.db"
    async with session(restartable(db, []), WITH_TASKS) as s:
        created = await s.send_request(
            "tools/call", {"name": "deploy", "arguments": {"target": "x"}}
        )
        await until(s, created["taskId"], "input_required")
    without = MCPServer(
        "durable",
        request_state_security=RequestStateSecurity(keys=[b"k" * 32]),
        task_store=SqliteTaskStore(db),
    )
    async with session(without, WITH_TASKS) as s:
        failed = await until(s, created["taskId"], "failed")
    assert "cannot be resumed" in failed["error"]["message"]
