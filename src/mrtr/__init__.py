"""mrtr: an MCP client for multi-round-trip requests (protocol 2026-07-28), and both eras.

The public API lives here. Names load on first use, so `import mrtr` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from mrtr.errors import (
    AlreadyAnsweredError,
    AuthError,
    AuthorizationDeniedError,
    AuthorizationRequiredError,
    ClientStateError,
    DeadlineExceededError,
    DiscoveryError,
    InputLimitExceededError,
    InputRequiredError,
    InputRequiredNotAllowedError,
    InputRequiredRoundsExceededError,
    InsufficientScopeError,
    InvalidInputResponseError,
    IssuerMismatchError,
    LeaseLostError,
    MCPError,
    MessageTooLargeError,
    MRTRError,
    PausedCallBusyError,
    PausedCallClosedError,
    PausedCallError,
    PausedCallExpiredError,
    PausedCallFormatError,
    PausedCallIncompleteError,
    PausedCallInDoubtError,
    PausedCallMismatchError,
    PausedCallNotFoundError,
    ProcessExitedError,
    ProtocolError,
    RegistrationError,
    RequestStateRejectedError,
    RequestTimeoutError,
    ResourceMismatchError,
    StaleRoundError,
    TokenEndpointError,
    TransportError,
)

if TYPE_CHECKING:
    from mrtr._driver import (
        DEFAULT_INPUT_REQUIRED_MAX_ROUNDS,
        CallIdentity,
        InputLimits,
        RoundEvent,
        run_input_required_driver,
    )
    from mrtr._driver_flow import FlowState, InputRequiredFlow
    from mrtr._paused import PAUSE, PausedCall
    from mrtr._paused_store import (
        Claim,
        Completed,
        Failed,
        PausedCallStore,
        Repaused,
        StoredCall,
    )
    from mrtr._store_redis import RedisPausedCallStore
    from mrtr._store_sqlite import SqlitePausedCallStore
    from mrtr.client import Client, ClientRequestContext, ClientState
    from mrtr.session import ClientSession
    from mrtr.transports import StdioServerParameters

__version__ = "0.1.0.dev0"

_LAZY = {
    "CallIdentity": "mrtr._driver",
    "FlowState": "mrtr._driver_flow",
    "InputRequiredFlow": "mrtr._driver_flow",
    "PAUSE": "mrtr._paused",
    "PausedCall": "mrtr._paused",
    "Claim": "mrtr._paused_store",
    "Completed": "mrtr._paused_store",
    "Failed": "mrtr._paused_store",
    "PausedCallStore": "mrtr._paused_store",
    "Repaused": "mrtr._paused_store",
    "StoredCall": "mrtr._paused_store",
    "RedisPausedCallStore": "mrtr._store_redis",
    "SqlitePausedCallStore": "mrtr._store_sqlite",
    "Client": "mrtr.client",
    "ClientRequestContext": "mrtr.client",
    "ClientState": "mrtr.client",
    "ClientSession": "mrtr.session",
    "DEFAULT_INPUT_REQUIRED_MAX_ROUNDS": "mrtr._driver",
    "InputLimits": "mrtr._driver",
    "RoundEvent": "mrtr._driver",
    "StdioServerParameters": "mrtr.transports",
    "run_input_required_driver": "mrtr._driver",
}

__all__ = [
    "DEFAULT_INPUT_REQUIRED_MAX_ROUNDS",
    "PAUSE",
    "AlreadyAnsweredError",
    "AuthError",
    "AuthorizationDeniedError",
    "AuthorizationRequiredError",
    "CallIdentity",
    "Claim",
    "Client",
    "ClientRequestContext",
    "ClientSession",
    "ClientState",
    "ClientStateError",
    "Completed",
    "DeadlineExceededError",
    "DiscoveryError",
    "Failed",
    "FlowState",
    "InputLimitExceededError",
    "InputLimits",
    "InputRequiredError",
    "InputRequiredFlow",
    "InputRequiredNotAllowedError",
    "InputRequiredRoundsExceededError",
    "InsufficientScopeError",
    "InvalidInputResponseError",
    "IssuerMismatchError",
    "LeaseLostError",
    "MCPError",
    "MRTRError",
    "MessageTooLargeError",
    "PausedCall",
    "PausedCallBusyError",
    "PausedCallClosedError",
    "PausedCallError",
    "PausedCallExpiredError",
    "PausedCallFormatError",
    "PausedCallInDoubtError",
    "PausedCallIncompleteError",
    "PausedCallMismatchError",
    "PausedCallNotFoundError",
    "PausedCallStore",
    "ProcessExitedError",
    "ProtocolError",
    "RedisPausedCallStore",
    "RegistrationError",
    "Repaused",
    "RequestStateRejectedError",
    "RequestTimeoutError",
    "ResourceMismatchError",
    "RoundEvent",
    "SqlitePausedCallStore",
    "StaleRoundError",
    "StdioServerParameters",
    "StoredCall",
    "TokenEndpointError",
    "TransportError",
    "run_input_required_driver",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'mrtr' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
