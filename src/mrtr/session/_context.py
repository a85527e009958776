"""What a callback is told about the request it serves, and the callback shapes.

`ClientRequestContext` lives in the session, below the client, so that the session
(legacy back-channel) and the client (automatic multi-round-trip loop) hand the same
object to the same callbacks. It is re-exported from `mrtr.client` and `mrtr.session`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

if TYPE_CHECKING:
    from mrtr.session._session import ClientSession
    from mrtr.types import (
        CreateMessageRequestParams,
        CreateMessageResult,
        ElicitRequestParams,
        ElicitResult,
        ErrorData,
        JSONRPCNotification,
        ListRootsResult,
        TypedNotification,
    )

__all__ = [
    "ChangeCallback",
    "ClientRequestContext",
    "ElicitationCallback",
    "ListRootsCallback",
    "LoggingCallback",
    "MessageHandler",
    "ProgressCallback",
    "SamplingCallback",
]


@dataclass(frozen=True, slots=True)
class ClientRequestContext:
    """What a callback knows about the request it is answering.

    Attributes:
        session: the session the request arrived on.
        method: the client call being served (``tools/call``, ``prompts/get``,
            ``resources/read``), or ``None`` on a legacy back-channel request that cannot
            be tied to one call.
        name: the tool or prompt name, or the resource URI, when known.
        arguments: the arguments of the call being served, when known.
        round: the round of the multi-round-trip exchange (1 for the first
            InputRequiredResult), ``None`` on the legacy back-channel.
        key: the input-request key the answer goes under, ``None`` on the back-channel.
        protocol_version: the negotiated protocol version.
        request_id: the JSON-RPC id of the server's request on the legacy back-channel;
            at 2026-07-28, the input request's key (as the official SDK has it).
        task_id: the task that asks (the tasks extension): the answer goes back with
            ``tasks/update``; ``None`` for a question of the request itself.
    """

    session: ClientSession
    method: str | None = None
    name: str | None = None
    arguments: Mapping[str, Any] | None = None
    round: int | None = None
    key: str | None = None
    protocol_version: str | None = None
    request_id: int | str | None = None
    task_id: str | None = None


ElicitationCallback: TypeAlias = Callable[
    [ClientRequestContext, "ElicitRequestParams"],
    Awaitable["ElicitResult | ErrorData | Mapping[str, Any]"],
]
"""``async (ctx, params) -> ElicitResult | ErrorData`` (a plain dict is validated)."""

SamplingCallback: TypeAlias = Callable[
    [ClientRequestContext, "CreateMessageRequestParams"],
    Awaitable["CreateMessageResult | ErrorData | Mapping[str, Any]"],
]
"""``async (ctx, params) -> CreateMessageResult | ErrorData``."""

ListRootsCallback: TypeAlias = Callable[
    [ClientRequestContext], Awaitable["ListRootsResult | ErrorData | Mapping[str, Any]"]
]
"""``async (ctx) -> ListRootsResult | ErrorData``."""

LoggingCallback: TypeAlias = Callable[[Any], Awaitable[None]]
"""``async (params: LoggingMessageNotificationParams) -> None``."""

MessageHandler: TypeAlias = Callable[["TypedNotification | JSONRPCNotification"], Awaitable[None]]
"""``async (notification) -> None``: every notification without a dedicated route.

The notification is its wire model (``ToolListChangedNotification``, ...), or a
`JSONRPCNotification` for a method this library does not know; ``.to_wire()`` gives the
message as it came.
"""

ChangeCallback: TypeAlias = Callable[[Any], Awaitable[None]]
"""``async (event: ChangeEvent) -> None``: a list or a subscribed resource changed."""

ProgressCallback: TypeAlias = Callable[[float, "float | None", "str | None"], Awaitable[None]]
"""``async (progress, total, message) -> None``, called in order from the reader."""
