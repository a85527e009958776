"""`AppSpec`: what the request-time code needs of an `MCPServer`, as one frozen value.

The app builds it once (``app.spec``); the routes, the entries, the rounds and the
engine take it, and nothing below the app names the app. The low-level `Server` did the
same with its `ServerSpec`. Three things in it stay live on purpose: the registry (a
tool added after the first request is served), the dependency overrides (a test sets a
fake after registering) and the observers (the testing kit listens per call); the
sealing policy is read from the low-level server each time (it may be replaced).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mrtr.server._defaults import (
    DEFAULT_LEGACY_SHIM_MAX_ROUNDS,
    DEFAULT_MAX_STATE_BYTES,
    DEFAULT_MAX_URI_LENGTH,
)
from mrtr.server._mcpserver._asks import identity

if TYPE_CHECKING:  # hints only: what the spec holds is built above it
    from mrtr.server._mcpserver._entries._registry import Registry
    from mrtr.server._mcpserver._entries._resource import ResourceEntry
    from mrtr.server._mcpserver._rounds._engine import Outcome
    from mrtr.server._server import Server

__all__ = ["AppSpec"]


@dataclass(frozen=True, slots=True, eq=False)
class AppSpec:
    """An `MCPServer` as a tool call sees it.

    Attributes:
        server: the low-level `Server` (sealing, notifications, the task runner).
        registry: the tools, prompts, resources and templates, by name or URI (live).
        overrides: ``app.dependency_overrides`` itself (live: read per call).
        owner: the `MCPServer`, for ``ctx.mcp_server`` only (opaque here).
        max_state_bytes: the cap on the engine's state per round.
        allow_unsealed_answers: read answers although requestState is unsealed.
        legacy_shim: fulfil a handler's own questions over a legacy back-channel.
        legacy_shim_max_rounds: the bound on those re-entries per call.
        max_uri_length: the longest URI ``resources/read`` looks up.
        allow_path_traversal: let a template variable hold a ``..`` segment.
        observers: called with the `Outcome` of every run (the testing kit's).
        failure_observers: called with the exception of every failed call.
    """

    server: Server
    registry: Registry
    overrides: dict[Callable[..., Any], Callable[..., Any]] = field(default_factory=dict)
    owner: Any = None
    max_state_bytes: int = DEFAULT_MAX_STATE_BYTES
    allow_unsealed_answers: bool = False
    legacy_shim: bool = True
    legacy_shim_max_rounds: int = DEFAULT_LEGACY_SHIM_MAX_ROUNDS
    max_uri_length: int = DEFAULT_MAX_URI_LENGTH
    allow_path_traversal: bool = False
    observers: list[Callable[[Outcome], None]] = field(default_factory=list)
    failure_observers: list[Callable[[BaseException], None]] = field(default_factory=list)

    @property
    def sealed(self) -> bool:
        """Whether ``requestState`` is sealed (the low-level server's policy, now)."""
        return self.server.request_state_policy is not None

    @property
    def trusts_answers(self) -> bool:
        """Whether answers may be read: sealed, or unsealed answers allowed."""
        return self.allow_unsealed_answers or self.server.request_state_policy is not None

    def override_of(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """The fake standing in for resolver `fn`, or `fn` (bound methods by owner)."""
        wanted = identity(fn)
        for original, fake in self.overrides.items():
            if identity(original) == wanted:
                return fake
        return fn

    def observed(self, outcome: Outcome) -> Outcome:
        """Tell the observers of `outcome`; return it."""
        for observe in self.observers:
            observe(outcome)
        return outcome

    def failed(self, exc: BaseException) -> None:
        """A call failed with `exc` (the client sees a short message; a test sees why)."""
        for observe in self.failure_observers:
            observe(exc)

    def find_resource(self, uri: str) -> tuple[ResourceEntry, dict[str, str]] | None:
        """The entry serving `uri` and its variables, or ``None``.

        Raises:
            MCPError: -32602, the URI is longer than `max_uri_length`, or a variable
                holds a ``..`` segment (unless path traversal is allowed).
        """
        return self.registry.find_resource(
            uri, max_uri_length=self.max_uri_length, allow_path_traversal=self.allow_path_traversal
        )
