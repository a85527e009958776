"""The small parts under task following: poll bounds, the per-request declaration, Mcp-Name."""

from __future__ import annotations

from typing import Any

import pytest

from mrtr import TaskPolling
from mrtr._wire.http_headers import ToolHeaderRegistry, modern_headers
from mrtr.session._envelope import EraState
from mrtr.session._task_check import with_tasks_extension
from mrtr.types import Implementation
from mrtr.types._constants import META_CLIENT_CAPABILITIES

TASKS = "io.modelcontextprotocol/tasks"


def test_the_servers_interval_is_honoured_within_bounds() -> None:
    polling = TaskPolling(min_interval=0.1, max_interval=10.0)
    assert polling.delay(2500) == 2.5
    assert polling.delay(0) == 0.1  # a busy loop is refused
    assert polling.delay(86_400_000) == 10.0  # a day is not waited
    assert polling.delay(float("nan")) == 10.0


def test_without_a_suggestion_the_wait_ramps_up_to_a_steady_ceiling() -> None:
    polling = TaskPolling(initial_interval=0.1, default_interval=0.5)
    waits = [polling.delay(None)]
    for _ in range(4):
        waits.append(polling.delay(None, waits[-1]))
    assert waits == [0.1, 0.2, 0.4, 0.5, 0.5]


@pytest.mark.parametrize(
    "bad",
    [
        {"min_interval": 0},
        {"max_interval": -1},
        {"max_polls": 0},
        {"max_input_requests": True},
        {"min_interval": 5.0, "max_interval": 1.0},
    ],
)
def test_a_limit_that_is_not_positive_is_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="TaskPolling"):
        TaskPolling(**bad)


def test_declaring_the_extension_keeps_the_other_extensions() -> None:
    base = {"elicitation": {}, "extensions": {"x/other": {"a": 1}}}
    on = with_tasks_extension(base, True)
    assert on == {"elicitation": {}, "extensions": {"x/other": {"a": 1}, TASKS: {}}}
    assert with_tasks_extension(on, False) == base
    assert with_tasks_extension({}, False) == {}
    assert with_tasks_extension(with_tasks_extension({}, True), False) == {}
    assert base == {"elicitation": {}, "extensions": {"x/other": {"a": 1}}}  # unchanged


def test_a_request_with_its_own_capabilities_keeps_them_in_the_envelope() -> None:
    era = EraState(Implementation(name="c", version="1"), {"roots": {}}, None)
    era.adopt_modern("2026-07-28", None)
    own: dict[str, Any] = {"roots": {}, "extensions": {TASKS: {}}}
    sent = era.params({"name": "t", "_meta": {META_CLIENT_CAPABILITIES: own}}, None)
    assert sent is not None
    assert sent["_meta"][META_CLIENT_CAPABILITIES] == own
    plain = era.params({"name": "t"}, None)
    assert plain is not None
    assert plain["_meta"][META_CLIENT_CAPABILITIES] == {"roots": {}}


@pytest.mark.parametrize("method", ["tasks/get", "tasks/update", "tasks/cancel"])
def test_a_request_about_a_task_names_it_in_mcp_name(method: str) -> None:
    message = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {"taskId": "t-42"}}
    headers = modern_headers(message, "2026-07-28", ToolHeaderRegistry())
    assert headers["Mcp-Name"] == "t-42"
    assert headers["Mcp-Method"] == method
