"""Server notifications as typed models and change events; stdio parameters from other SDKs."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from mrtr import (
    Client,
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    StdioServerParameters,
    ToolsListChanged,
)
from mrtr.session._events import change_event, typed_notification
from mrtr.transports._stdio_compat import as_stdio_parameters, looks_like_stdio_parameters
from mrtr.types import (
    JSONRPCNotification,
    LoggingMessageNotification,
    ResourceUpdatedNotification,
    ToolListChangedNotification,
)


def test_change_events() -> None:
    assert change_event("notifications/tools/list_changed", None) == ToolsListChanged()
    assert change_event("notifications/prompts/list_changed", {}) == PromptsListChanged()
    assert change_event("notifications/resources/list_changed", None) == ResourcesListChanged()
    assert change_event("notifications/resources/updated", {"uri": "a://b"}) == ResourceUpdated(
        "a://b"
    )
    assert change_event("notifications/resources/updated", {"uri": 3}) is None
    assert change_event("notifications/message", {"level": "info"}) is None


def test_typed_notifications_keep_the_raw_message() -> None:
    tools = typed_notification("notifications/tools/list_changed", None)
    assert isinstance(tools, ToolListChangedNotification)
    assert tools.to_wire() == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
    updated = typed_notification("notifications/resources/updated", {"uri": "a://b", "x": 1})
    assert isinstance(updated, ResourceUpdatedNotification) and updated.params.uri == "a://b"
    assert updated.to_wire()["params"] == {"uri": "a://b", "x": 1}  # unknown fields kept
    log = typed_notification("notifications/message", {"level": "info", "data": "hi"})
    assert isinstance(log, LoggingMessageNotification)
    # a known method whose params do not validate, an unknown method, params not an object
    bad = typed_notification("notifications/resources/updated", {"nouri": True})
    assert isinstance(bad, JSONRPCNotification)
    assert bad.to_wire() == {
        "jsonrpc": "2.0",
        "method": "notifications/resources/updated",
        "params": {"nouri": True},
    }
    custom = typed_notification("x/y", {"a": [1]})
    assert isinstance(custom, JSONRPCNotification) and custom.params == {"a": [1]}
    odd = typed_notification("x/y", [1, 2])
    assert isinstance(odd, JSONRPCNotification) and odd.method == "x/y"


@dataclass
class OtherParams:
    command: str
    args: list[str] = field(default_factory=list)
    env: dict[str, str] | None = None
    cwd: str | None = None


def test_other_sdks_stdio_parameters_are_read_into_ours() -> None:
    other = OtherParams("python", ["-m", "server"], {"A": "1"}, "/tmp")
    assert looks_like_stdio_parameters(other)
    ours = as_stdio_parameters(other)
    assert ours == StdioServerParameters("python", ["-m", "server"], {"A": "1"}, "/tmp")
    assert as_stdio_parameters(ours) is ours
    Client(other)  # accepted as a target
    with pytest.raises(TypeError):
        as_stdio_parameters(OtherParams("python", "-m server"))  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        as_stdio_parameters(OtherParams("python", [], {"A": 1}))  # type: ignore[dict-item]
    assert not looks_like_stdio_parameters(object())
    with pytest.raises(TypeError):
        Client(object())  # type: ignore[arg-type]
