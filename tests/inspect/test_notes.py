"""Notifications have their own lane; progress stays with its call."""

from __future__ import annotations

from tests.inspect import apps
from tests.inspect.test_explain import serving
from tests.inspect.test_legacy import api, next_state


def test_log_messages_and_list_changes_go_to_the_lane_progress_to_the_row() -> None:
    with serving(
        apps.chatty, {"kind": "app", "module": "tests.inspect.apps", "attr": "chatty"}
    ) as inspector:
        api(inspector, "/api/call", {"kind": "tool", "name": "work", "arguments": {}})
        state = next_state(
            inspector, -1,
            lambda s: s["calls"][0]["status"] != "running"
            and any(n["method"] == "(listen) ToolsListChanged" for n in s["notes"]),
        )  # fmt: skip
    (call,) = state["calls"]
    methods = [n["method"] for n in state["notes"]]
    assert "notifications/message" in methods
    logged = next(n for n in state["notes"] if n["method"] == "notifications/message")
    assert logged["params"]["data"] == "<b>starting</b>"
    assert call["progress"][0]["progress"] == 1 and call["progress"][0]["message"] == "half"
