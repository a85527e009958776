"""`ServerSpec`: what the server core needs to know of a `Server`, as one frozen value.

`Server` builds it (`Server.spec`); `ServerConnection` takes it. The core thus finds
each method's handler in a table instead of looking attributes up on the class that
imports it, and nothing below `_server.py` names `Server`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mrtr._otel import Telemetry
from mrtr.server._core._context import ServerRequestContext
from mrtr.server._core._envelope import EnvelopeCache
from mrtr.server._core._notify import ChangeHub
from mrtr.server._defaults import (
    DEFAULT_MAX_CLIENT_INFO_BYTES,
    DEFAULT_MAX_PENDING_EVENTS,
    DEFAULT_MAX_RESOURCE_SUBSCRIPTIONS,
)
from mrtr.server._sealing._security import RequestStateSecurity

if TYPE_CHECKING:
    from pydantic import BaseModel

    from mrtr.server._core._middleware import ServerMiddleware

__all__ = ["Handler", "ServerSpec"]

Handler = Callable[[ServerRequestContext, Any], Awaitable[Any]]
"""``async (ctx, params) -> result``: one method's handler."""


@dataclass(frozen=True, slots=True)
class ServerSpec:
    """A server as the core sees it.

    Attributes:
        handlers: the handler of each method that has one (``tools/call``, ...).
        request_state_policy: seals and opens ``requestState`` (``None``: unsealed).
        audience: the audience claim of sealed state.
        discover_result: builds the answer to ``server/discover``.
        initialize_result: builds the answer to a legacy ``initialize`` at a version.
        handler_error_log_level: the level at which a handler's exception is logged.
        telemetry: whether and how to trace (OpenTelemetry; off unless a provider is set).
        envelopes: the modern envelopes validated lately, shared by the connections made
            from this spec (every modern HTTP POST is a connection of its own).
        client_request_timeout: seconds a handler waits for the client's answer to a
            request the server sent it (legacy sessions).
        max_client_requests: requests to the client outstanding at once per connection.
        hub: the server's change listeners (``notify_*`` publishes to it).
        max_pending_events: distinct changes waiting for one listener before it is dropped.
        max_resource_subscriptions: resource URIs one listener may subscribe to.
        max_subscription_bytes: characters of those URIs in all.
        max_client_info_bytes: characters (as JSON) of the capabilities and client info
            a legacy ``initialize`` may carry.
        params_models: the params model of each method registered with
            ``add_request_handler`` (custom methods, or a spec method's own model).
        middleware: the around-handler hooks, outermost first.
        server_info: the ``Implementation`` stamped in ``_meta`` of 2026-07-28 results.
        instance_id: this instance's name on every span (``service.instance.id``).
        task_owner: the principal digest a request's tasks are bound to (the Tasks
            extension's runner; ``None`` without it): a listen gets only its own tasks.
    """

    handlers: Mapping[str, Handler]
    request_state_policy: RequestStateSecurity | None
    audience: str | None
    discover_result: Callable[[], dict[str, Any]]
    initialize_result: Callable[[str], dict[str, Any]]
    handler_error_log_level: int
    telemetry: Telemetry = field(default_factory=Telemetry)
    envelopes: EnvelopeCache = field(default_factory=EnvelopeCache, compare=False)
    client_request_timeout: float = 300.0
    max_client_requests: int = 64
    hub: ChangeHub = field(default_factory=ChangeHub)
    max_pending_events: int = DEFAULT_MAX_PENDING_EVENTS
    max_resource_subscriptions: int = DEFAULT_MAX_RESOURCE_SUBSCRIPTIONS
    max_subscription_bytes: int = 1024 * 1024
    max_client_info_bytes: int = DEFAULT_MAX_CLIENT_INFO_BYTES
    params_models: Mapping[str, type[BaseModel]] = field(default_factory=dict)
    middleware: tuple[ServerMiddleware, ...] = ()
    server_info: dict[str, Any] | None = None
    task_owner: Callable[[ServerRequestContext], str] | None = None
    instance_id: str | None = None
