"""Paused-call values for the tests: two requests (an approval and the roots), odd strings."""

from __future__ import annotations

import time
from dataclasses import replace

from mrtr import PausedCall
from mrtr.flow._flow import FlowState
from mrtr.types import InputRequiredResult, parse_result

LONE = "st-\ud800-\udfff-\u00e9-\U0001f600"


def pending(state: str | None = LONE) -> InputRequiredResult:
    raw = {
        "resultType": "input_required",
        "inputRequests": {
            "approval": {
                "method": "elicitation/create",
                "params": {
                    "mode": "form",
                    "message": "Approve?",
                    "requestedSchema": {
                        "type": "object",
                        "properties": {"approval": {"type": "string"}},
                    },
                },
            },
            "roots": {"method": "roots/list"},
        },
        "requestState": state,
    }
    result = parse_result("tools/call", raw)
    assert isinstance(result, InputRequiredResult)
    return result


def make(**changes: object) -> PausedCall:
    """A paused call at round 2 with a lone surrogate in its state and its arguments."""
    call = PausedCall(
        id=changes.pop("id", "abc"),  # type: ignore[arg-type]
        method="tools/call",
        name="approve",
        arguments={"n": 1, "note": "\udc80"},
        protocol_version="2026-07-28",
        server_name="Approvals",
        server_version="2.0.0",
        flow=FlowState(round=2, delay=0.1, pending=pending()),
        max_rounds=7,
        created_at=1.5,
        paused_at=2.5,
        expires_at=time.time() + 3600,
        meta={"tenant": "acme"},
    )
    return replace(call, **changes)  # type: ignore[arg-type]


ACCEPT = {"action": "accept", "content": {"approval": "yes"}}
