"""Notifications a client sends or receives."""

from __future__ import annotations

from typing import Any, Literal, TypeAlias

from mrtr._lazy import publish
from mrtr.types._base import NotificationParams, ProgressToken, RequestId
from mrtr.types._jsonrpc import TypedNotification

__all__ = [
    "CancelledNotification",
    "CancelledNotificationParams",
    "ElicitCompleteNotification",
    "ElicitCompleteNotificationParams",
    "ElicitationCompleteNotification",
    "ElicitationCompleteNotificationParams",
    "LoggingLevel",
    "LoggingMessageNotification",
    "LoggingMessageNotificationParams",
    "ProgressNotification",
    "ProgressNotificationParams",
    "PromptListChangedNotification",
    "ResourceListChangedNotification",
    "ResourceUpdatedNotification",
    "ResourceUpdatedNotificationParams",
    "RootsListChangedNotification",
    "ToolListChangedNotification",
]

LoggingLevel: TypeAlias = Literal[
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"
]
"""Log severities, least to most severe (RFC 5424)."""


class ProgressNotificationParams(NotificationParams):
    """Progress of a long request, tied to it by `progress_token`."""

    progress_token: ProgressToken
    progress: float
    total: float | None = None
    message: str | None = None


class LoggingMessageNotificationParams(NotificationParams):
    """A log message from the server."""

    level: LoggingLevel
    logger: str | None = None
    data: Any


class CancelledNotificationParams(NotificationParams):
    """A sender gives up on one of its requests."""

    request_id: RequestId | None = None
    reason: str | None = None


class ResourceUpdatedNotificationParams(NotificationParams):
    """A subscribed resource changed."""

    uri: str


class ElicitationCompleteNotificationParams(NotificationParams):
    """A URL-mode elicitation finished out of band (legacy)."""

    elicitation_id: str


class ProgressNotification(TypedNotification):
    """`notifications/progress`."""

    method: Literal["notifications/progress"] = "notifications/progress"
    params: ProgressNotificationParams


class LoggingMessageNotification(TypedNotification):
    """`notifications/message`."""

    method: Literal["notifications/message"] = "notifications/message"
    params: LoggingMessageNotificationParams


class CancelledNotification(TypedNotification):
    """`notifications/cancelled`."""

    method: Literal["notifications/cancelled"] = "notifications/cancelled"
    params: CancelledNotificationParams


class ResourceUpdatedNotification(TypedNotification):
    """`notifications/resources/updated`."""

    method: Literal["notifications/resources/updated"] = "notifications/resources/updated"
    params: ResourceUpdatedNotificationParams


class ToolListChangedNotification(TypedNotification):
    """`notifications/tools/list_changed`."""

    method: Literal["notifications/tools/list_changed"] = "notifications/tools/list_changed"
    params: NotificationParams | None = None


class PromptListChangedNotification(TypedNotification):
    """`notifications/prompts/list_changed`."""

    method: Literal["notifications/prompts/list_changed"] = "notifications/prompts/list_changed"
    params: NotificationParams | None = None


class ResourceListChangedNotification(TypedNotification):
    """`notifications/resources/list_changed`."""

    method: Literal["notifications/resources/list_changed"] = "notifications/resources/list_changed"
    params: NotificationParams | None = None


class RootsListChangedNotification(TypedNotification):
    """`notifications/roots/list_changed` (legacy): the client's roots changed."""

    method: Literal["notifications/roots/list_changed"] = "notifications/roots/list_changed"
    params: NotificationParams | None = None


class ElicitationCompleteNotification(TypedNotification):
    """`notifications/elicitation/complete` (legacy)."""

    method: Literal["notifications/elicitation/complete"] = "notifications/elicitation/complete"
    params: ElicitationCompleteNotificationParams


# the official SDK's names for the same notification (porting is a rename)
ElicitCompleteNotification = ElicitationCompleteNotification
"""The official SDK's name for `ElicitationCompleteNotification`."""
ElicitCompleteNotificationParams = ElicitationCompleteNotificationParams
"""The official SDK's name for `ElicitationCompleteNotificationParams`."""

publish(
    "mrtr.types",
    CancelledNotification,
    CancelledNotificationParams,
    ElicitationCompleteNotification,
    ElicitationCompleteNotificationParams,
    LoggingMessageNotification,
    LoggingMessageNotificationParams,
    ProgressNotification,
    ProgressNotificationParams,
    PromptListChangedNotification,
    ResourceListChangedNotification,
    ResourceUpdatedNotification,
    ResourceUpdatedNotificationParams,
    RootsListChangedNotification,
    ToolListChangedNotification,
)
