"""What the server's notifications mean to a client: typed models and change events.

A notification arrives as a method and a params object. `typed_notification` turns it
into its wire model (`ToolListChangedNotification`, ...) for the message handler, or a
plain `JSONRPCNotification` when the method is unknown or the params do not validate:
either way ``.to_wire()`` gives the message back. `change_event` reads the four change
notifications as plain-data events, the same in both eras: on a legacy connection they
arrive on their own, on a 2026-07-28 connection on a ``subscriptions/listen`` stream.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

from mrtr._lazy import publish

if TYPE_CHECKING:
    from mrtr.types import JSONRPCNotification, TypedNotification

__all__ = [
    "CHANGE_METHODS",
    "ChangeEvent",
    "PromptsListChanged",
    "ResourceUpdated",
    "ResourcesListChanged",
    "ToolsListChanged",
    "change_event",
    "typed_notification",
]

_logger = logging.getLogger("mrtr.session")


@dataclass(frozen=True, slots=True)
class ToolsListChanged:
    """The server's list of tools changed: list them again."""


@dataclass(frozen=True, slots=True)
class PromptsListChanged:
    """The server's list of prompts changed: list them again."""


@dataclass(frozen=True, slots=True)
class ResourcesListChanged:
    """The server's list of resources changed: list them again."""


@dataclass(frozen=True, slots=True)
class ResourceUpdated:
    """A subscribed resource (or a sub-resource of it) changed: read `uri` again."""

    uri: str


ChangeEvent: TypeAlias = (
    ToolsListChanged | PromptsListChanged | ResourcesListChanged | ResourceUpdated
)
"""One change the server told the client about."""

CHANGE_METHODS = frozenset(
    {
        "notifications/tools/list_changed",
        "notifications/prompts/list_changed",
        "notifications/resources/list_changed",
        "notifications/resources/updated",
    }
)


def change_event(method: str, params: Any) -> ChangeEvent | None:
    """The change `method` announces, or ``None`` (not a change, or no usable uri)."""
    if method == "notifications/tools/list_changed":
        return ToolsListChanged()
    if method == "notifications/prompts/list_changed":
        return PromptsListChanged()
    if method == "notifications/resources/list_changed":
        return ResourcesListChanged()
    if method == "notifications/resources/updated":
        uri = params.get("uri") if isinstance(params, dict) else None
        if isinstance(uri, str):
            return ResourceUpdated(uri)
        _logger.warning("ignoring a resources/updated notification without a uri: %r", params)
    return None


def _models() -> dict[str, type[TypedNotification]]:
    from mrtr import types

    return {
        "notifications/tools/list_changed": types.ToolListChangedNotification,
        "notifications/prompts/list_changed": types.PromptListChangedNotification,
        "notifications/resources/list_changed": types.ResourceListChangedNotification,
        "notifications/resources/updated": types.ResourceUpdatedNotification,
        "notifications/message": types.LoggingMessageNotification,
        "notifications/progress": types.ProgressNotification,
        "notifications/cancelled": types.CancelledNotification,
        "notifications/elicitation/complete": types.ElicitationCompleteNotification,
    }


def typed_notification(method: str, params: Any) -> TypedNotification | JSONRPCNotification:
    """The wire model of one notification from the server.

    A known method whose params validate gets its own model; anything else a
    `JSONRPCNotification` holding the message as it came. ``.to_wire()`` on either gives
    the raw message back (unknown fields are kept).
    """
    from pydantic import ValidationError

    from mrtr.types import JSONRPCNotification

    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    model = _models().get(method)
    if model is not None:
        try:
            return model.model_validate(message)
        except ValidationError:
            _logger.debug("a %s notification did not validate; passing it on raw", method)
    try:
        return JSONRPCNotification.model_validate(message)
    except ValidationError:
        # params that are not an object: keep the method, drop what cannot be carried
        return JSONRPCNotification(method=method)


publish("mrtr", PromptsListChanged, ResourceUpdated, ResourcesListChanged, ToolsListChanged)
