"""examples/mcpserver_tasks.py, driven to the end in process and over stdio (a real process)."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from mrtr.session import ClientSession
from mrtr.transports import StdioServerParameters
from mrtr.transports._stdio import StdioTransport
from mrtr.types import TASKS_EXTENSION

pytestmark = pytest.mark.anyio

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "mcpserver_tasks.py"
CAPS: dict[str, Any] = {"elicitation": {}, "extensions": {TASKS_EXTENSION: {}}}


def load(monkeypatch: pytest.MonkeyPatch, db: Path) -> ModuleType:
    monkeypatch.setenv("TASKS_DB", str(db))
    spec = importlib.util.spec_from_file_location("example_mcpserver_tasks", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # pydantic resolves names through it
    spec.loader.exec_module(module)
    return module


async def drive(session: ClientSession) -> dict[str, Any]:
    """The whole flow: the dataset question, the handle, the approval, the result."""
    args = {"rows": 10}
    first = await session.send_request("tools/call", {"name": "export_report", "arguments": args})
    assert first["resultType"] == "input_required"
    created = await session.send_request(
        "tools/call",
        {
            "name": "export_report",
            "arguments": args,
            "inputResponses": {"dataset": {"action": "accept", "content": {"dataset": "sales"}}},
            "requestState": first["requestState"],
        },
    )
    assert created["resultType"] == "task"
    task_id = created["taskId"]
    with anyio.fail_after(30):
        while (got := await session.send_request("tasks/get", {"taskId": task_id}))[
            "status"
        ] == "working":
            await anyio.lowlevel.checkpoint()
        assert got["status"] == "input_required"
        (key,) = got["inputRequests"]
        yes = {"action": "accept", "content": {"approve": True}}
        await session.send_request(
            "tasks/update", {"taskId": task_id, "inputResponses": {key: yes}}
        )
        while (got := await session.send_request("tasks/get", {"taskId": task_id}))[
            "status"
        ] not in ("completed", "failed", "cancelled"):
            await anyio.lowlevel.checkpoint()
    return got


async def test_the_example_in_process(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    module = load(monkeypatch, tmp_path / "tasks.db")
    async with (
        module.app.client_transport() as transport,
        ClientSession(transport, capabilities=CAPS) as session,
    ):
        session.adopt("2026-07-28")
        done = await drive(session)
    assert done["result"]["content"][0]["text"] == "Published the sales report (10 rows)."
    assert (tmp_path / "tasks.db").exists()


async def test_the_example_over_stdio(tmp_path: Path) -> None:
    env = {"TASKS_DB": str(tmp_path / "tasks.db"), "PYTHONPATH": os.pathsep.join(sys.path)}
    params = StdioServerParameters(command=sys.executable, args=[str(EXAMPLE)], env=env)
    with anyio.fail_after(60):
        async with (
            StdioTransport(params) as transport,
            ClientSession(transport, capabilities=CAPS) as session,
        ):
            session.adopt("2026-07-28")
            done = await drive(session)
    assert done["status"] == "completed"
