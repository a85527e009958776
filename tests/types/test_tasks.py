"""The Tasks extension's wire models: the shapes the conformance suite checks."""

from __future__ import annotations

import pytest

from mrtr.errors import ProtocolError
from mrtr.types import (
    TASKS_EXTENSION,
    CancelTaskResult,
    CreateTaskResult,
    GetTaskResult,
    TaskStatusNotification,
    TaskStatusNotificationParams,
    UpdateTaskRequestParams,
    UpdateTaskResult,
    parse_result,
)

STAMP = "2026-12-06T01:00:00Z"


def _handle(**extra: object) -> CreateTaskResult:
    return CreateTaskResult(
        task_id="t1",
        status="working",
        created_at=STAMP,
        last_updated_at=STAMP,
        ttl_ms=60_000,
        poll_interval_ms=500,
        **extra,
    )


def test_the_handle_is_flat_and_uses_the_ms_names() -> None:
    wire = _handle().to_wire()
    assert wire == {
        "resultType": "task",
        "taskId": "t1",
        "status": "working",
        "createdAt": STAMP,
        "lastUpdatedAt": STAMP,
        "ttlMs": 60_000,
        "pollIntervalMs": 500,
    }
    for absent in ("task", "ttl", "pollInterval", "requestState", "result", "inputRequests"):
        assert absent not in wire


def test_an_unlimited_ttl_is_sent_as_null() -> None:
    wire = _handle().model_copy(update={"ttl_ms": None}).to_wire()
    assert "ttlMs" in wire and wire["ttlMs"] is None


def test_parse_result_reads_a_handle_only_for_tools_call() -> None:
    parsed = parse_result("tools/call", _handle().to_wire())
    assert isinstance(parsed, CreateTaskResult)
    assert parsed.task_id == "t1" and parsed.ttl_ms == 60_000
    with pytest.raises(ProtocolError):
        parse_result("prompts/get", _handle().to_wire())


def test_a_detailed_task_carries_what_its_status_brings() -> None:
    raw = {
        "resultType": "complete",
        "taskId": "t1",
        "status": "input_required",
        "createdAt": STAMP,
        "lastUpdatedAt": STAMP,
        "ttlMs": 1000,
        "inputRequests": {
            "k": {
                "method": "elicitation/create",
                "params": {"message": "Sure?", "requestedSchema": {"type": "object"}},
            }
        },
    }
    task = parse_result("tasks/get", raw)
    assert isinstance(task, GetTaskResult)
    assert task.input_requests is not None and set(task.input_requests) == {"k"}
    assert task.to_wire()["inputRequests"]["k"]["method"] == "elicitation/create"
    failed = GetTaskResult(
        task_id="t1",
        status="failed",
        created_at=STAMP,
        last_updated_at=STAMP,
        ttl_ms=1000,
        error={"code": -32603, "message": "boom"},
    ).to_wire()
    assert failed["error"] == {"code": -32603, "message": "boom"}
    assert failed["resultType"] == "complete" and "result" not in failed


def test_acks_are_bare_complete_results() -> None:
    assert UpdateTaskResult().to_wire() == {"resultType": "complete"}
    assert CancelTaskResult().to_wire() == {"resultType": "complete"}
    assert isinstance(parse_result("tasks/cancel", {"resultType": "complete"}), CancelTaskResult)


def test_update_params_keep_answers_raw() -> None:
    # an answer to a key the task does not wait for is ignored server-side, not refused here
    params = UpdateTaskRequestParams.model_validate(
        {"taskId": "t1", "inputResponses": {"unknown-key": {"ignored": True}}}
    )
    assert params.input_responses == {"unknown-key": {"ignored": True}}


def test_the_status_notification_carries_the_detailed_task() -> None:
    note = TaskStatusNotification(
        params=TaskStatusNotificationParams(
            task_id="t1",
            status="completed",
            created_at=STAMP,
            last_updated_at=STAMP,
            ttl_ms=1000,
            result={"content": [{"type": "text", "text": "done"}]},
        )
    ).to_wire()
    assert note["method"] == "notifications/tasks"
    assert note["params"]["taskId"] == "t1" and note["params"]["result"]["content"]


def test_the_extension_identifier() -> None:
    assert TASKS_EXTENSION == "io.modelcontextprotocol/tasks"
