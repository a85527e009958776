"""mrtr: an MCP client for multi-round-trip requests (protocol 2026-07-28), and both eras.

The public API lives here. Names load on first use (`mrtr._lazy`), so `import mrtr`
stays cheap. The sans-IO multi-round-trip flow is public too: `InputRequiredFlow` turns
results into plain-data actions (`DispatchInputs`, `Wait`, `Retry`, `Finish`) and keeps
its whole state in a `FlowState`, for code that runs the loop itself (a paused call, a
distributed client).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mrtr._lazy import lazy_exports
from mrtr._version import __version__ as __version__

if TYPE_CHECKING:
    from mrtr._driver import (
        DEFAULT_INPUT_REQUIRED_MAX_ROUNDS as DEFAULT_INPUT_REQUIRED_MAX_ROUNDS,
        CallIdentity as CallIdentity,
        InputLimits as InputLimits,
        RoundEvent as RoundEvent,
        run_input_required_driver as run_input_required_driver,
    )
    from mrtr._driver_flow import (
        DispatchInputs as DispatchInputs,
        Finish as Finish,
        FlowAction as FlowAction,
        FlowState as FlowState,
        InputRequiredFlow as InputRequiredFlow,
        Retry as Retry,
        Wait as Wait,
    )
    from mrtr.client import (
        Client as Client,
        ClientRequestContext as ClientRequestContext,
        ClientState as ClientState,
    )
    from mrtr.errors import (
        AuthError as AuthError,
        AuthorizationDeniedError as AuthorizationDeniedError,
        AuthorizationRequiredError as AuthorizationRequiredError,
        ClientStateError as ClientStateError,
        DeadlineExceededError as DeadlineExceededError,
        DiscoveryError as DiscoveryError,
        InputLimitExceededError as InputLimitExceededError,
        InputRequiredError as InputRequiredError,
        InputRequiredNotAllowedError as InputRequiredNotAllowedError,
        InputRequiredRoundsExceededError as InputRequiredRoundsExceededError,
        InsufficientScopeError as InsufficientScopeError,
        InvalidInputResponseError as InvalidInputResponseError,
        IssuerMismatchError as IssuerMismatchError,
        MCPError as MCPError,
        MessageTooLargeError as MessageTooLargeError,
        MRTRError as MRTRError,
        ProcessExitedError as ProcessExitedError,
        ProtocolError as ProtocolError,
        RedirectError as RedirectError,
        RegistrationError as RegistrationError,
        RequestStateRejectedError as RequestStateRejectedError,
        RequestTimeoutError as RequestTimeoutError,
        ResourceMismatchError as ResourceMismatchError,
        TokenEndpointError as TokenEndpointError,
        TransportError as TransportError,
    )
    from mrtr.session import ClientSession as ClientSession
    from mrtr.transports import StdioServerParameters as StdioServerParameters

_EXPORTS: dict[str, tuple[str, ...]] = {
    "mrtr._driver": (
        "DEFAULT_INPUT_REQUIRED_MAX_ROUNDS",
        "CallIdentity",
        "InputLimits",
        "RoundEvent",
        "run_input_required_driver",
    ),
    "mrtr._driver_flow": (
        "DispatchInputs",
        "Finish",
        "FlowAction",
        "FlowState",
        "InputRequiredFlow",
        "Retry",
        "Wait",
    ),
    "mrtr.client": ("Client", "ClientRequestContext", "ClientState"),
    "mrtr.errors": (
        "AuthError",
        "AuthorizationDeniedError",
        "AuthorizationRequiredError",
        "ClientStateError",
        "DeadlineExceededError",
        "DiscoveryError",
        "InputLimitExceededError",
        "InputRequiredError",
        "InputRequiredNotAllowedError",
        "InputRequiredRoundsExceededError",
        "InsufficientScopeError",
        "InvalidInputResponseError",
        "IssuerMismatchError",
        "MCPError",
        "MRTRError",
        "MessageTooLargeError",
        "ProcessExitedError",
        "ProtocolError",
        "RedirectError",
        "RegistrationError",
        "RequestStateRejectedError",
        "RequestTimeoutError",
        "ResourceMismatchError",
        "TokenEndpointError",
        "TransportError",
    ),
    "mrtr.session": ("ClientSession",),
    "mrtr.transports": ("StdioServerParameters",),
}

__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
