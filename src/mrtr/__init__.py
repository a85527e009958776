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
    from mrtr.client._cache import CacheMode as CacheMode, ResponseCache as ResponseCache
    from mrtr.flow._driver import (
        DEFAULT_INPUT_REQUIRED_MAX_ROUNDS as DEFAULT_INPUT_REQUIRED_MAX_ROUNDS,
        CallIdentity as CallIdentity,
        InputLimits as InputLimits,
        RoundEvent as RoundEvent,
        run_input_required_driver as run_input_required_driver,
    )
    from mrtr.flow._flow import (
        DispatchInputs as DispatchInputs,
        Finish as Finish,
        FlowAction as FlowAction,
        FlowState as FlowState,
        InputRequiredFlow as InputRequiredFlow,
        Retry as Retry,
        Wait as Wait,
    )
    from mrtr.session._events import (
        ChangeEvent as ChangeEvent,
        PromptsListChanged as PromptsListChanged,
        ResourcesListChanged as ResourcesListChanged,
        ResourceUpdated as ResourceUpdated,
        ToolsListChanged as ToolsListChanged,
    )
    from mrtr.session._listen import (
        Subscription as Subscription,
        SubscriptionFilter as SubscriptionFilter,
    )
    from mrtr.flow._paused import PAUSE as PAUSE, PausedCall as PausedCall
    from mrtr.paused._store import (
        Claim as Claim,
        Completed as Completed,
        Failed as Failed,
        PausedCallStore as PausedCallStore,
        Repaused as Repaused,
        StoredCall as StoredCall,
    )
    from mrtr.client._group import (
        ClientSessionGroup as ClientSessionGroup,
        ClientSessionParameters as ClientSessionParameters,
        SseServerParameters as SseServerParameters,
        StreamableHttpParameters as StreamableHttpParameters,
    )
    from mrtr.paused._redis import RedisPausedCallStore as RedisPausedCallStore
    from mrtr.paused._sqlite import SqlitePausedCallStore as SqlitePausedCallStore
    from mrtr.client import (
        Client as Client,
        ClientRequestContext as ClientRequestContext,
        ClientState as ClientState,
    )
    from mrtr.errors import (
        AlreadyAnsweredError as AlreadyAnsweredError,
        AuthError as AuthError,
        AuthorizationDeniedError as AuthorizationDeniedError,
        AuthorizationRequiredError as AuthorizationRequiredError,
        ClientStateError as ClientStateError,
        DeadlineExceededError as DeadlineExceededError,
        DiscoveryError as DiscoveryError,
        EraProbeTimeoutError as EraProbeTimeoutError,
        InputLimitExceededError as InputLimitExceededError,
        InputRequiredError as InputRequiredError,
        InputRequiredNotAllowedError as InputRequiredNotAllowedError,
        InputRequiredRoundsExceededError as InputRequiredRoundsExceededError,
        InsufficientScopeError as InsufficientScopeError,
        InvalidInputResponseError as InvalidInputResponseError,
        LeaseLostError as LeaseLostError,
        IssuerMismatchError as IssuerMismatchError,
        MCPError as MCPError,
        MessageTooLargeError as MessageTooLargeError,
        MRTRError as MRTRError,
        NotInThisEraError as NotInThisEraError,
        PausedCallBusyError as PausedCallBusyError,
        PausedCallClosedError as PausedCallClosedError,
        PausedCallError as PausedCallError,
        PausedCallExpiredError as PausedCallExpiredError,
        PausedCallFormatError as PausedCallFormatError,
        PausedCallIncompleteError as PausedCallIncompleteError,
        PausedCallInDoubtError as PausedCallInDoubtError,
        PausedCallMismatchError as PausedCallMismatchError,
        PausedCallNotFoundError as PausedCallNotFoundError,
        PausedCallStoreLockedError as PausedCallStoreLockedError,
        ProcessExitedError as ProcessExitedError,
        ProtocolError as ProtocolError,
        RedirectError as RedirectError,
        RegistrationError as RegistrationError,
        RequestStateRejectedError as RequestStateRejectedError,
        RequestTimeoutError as RequestTimeoutError,
        ResourceMismatchError as ResourceMismatchError,
        StaleRoundError as StaleRoundError,
        SubscriptionLostError as SubscriptionLostError,
        TaskCancelledError as TaskCancelledError,
        TaskError as TaskError,
        TaskFailedError as TaskFailedError,
        TaskFormatError as TaskFormatError,
        TaskInputRequiredError as TaskInputRequiredError,
        TaskLimitExceededError as TaskLimitExceededError,
        TaskMismatchError as TaskMismatchError,
        TaskNotAllowedError as TaskNotAllowedError,
        TokenEndpointError as TokenEndpointError,
        TransportError as TransportError,
        UnknownInputKeyError as UnknownInputKeyError,
    )
    from mrtr.session import ClientSession as ClientSession
    from mrtr.session._task import Task as Task
    from mrtr.session._task_polling import TaskPolling as TaskPolling
    from mrtr.transports import StdioServerParameters as StdioServerParameters

_EXPORTS: dict[str, tuple[str, ...]] = {
    "mrtr.client._cache": ("CacheMode", "ResponseCache"),
    "mrtr.flow._driver": (
        "DEFAULT_INPUT_REQUIRED_MAX_ROUNDS",
        "CallIdentity",
        "InputLimits",
        "RoundEvent",
        "run_input_required_driver",
    ),
    "mrtr.flow._flow": (
        "DispatchInputs",
        "Finish",
        "FlowAction",
        "FlowState",
        "InputRequiredFlow",
        "Retry",
        "Wait",
    ),
    "mrtr.session._events": (
        "ChangeEvent",
        "PromptsListChanged",
        "ResourceUpdated",
        "ResourcesListChanged",
        "ToolsListChanged",
    ),
    "mrtr.session._listen": ("Subscription", "SubscriptionFilter"),
    "mrtr.flow._paused": ("PAUSE", "PausedCall"),
    "mrtr.paused._store": (
        "Claim",
        "Completed",
        "Failed",
        "PausedCallStore",
        "Repaused",
        "StoredCall",
    ),
    "mrtr.client._group": (
        "ClientSessionGroup",
        "ClientSessionParameters",
        "SseServerParameters",
        "StreamableHttpParameters",
    ),
    "mrtr.paused._redis": ("RedisPausedCallStore",),
    "mrtr.paused._sqlite": ("SqlitePausedCallStore",),
    "mrtr.client": ("Client", "ClientRequestContext", "ClientState"),
    "mrtr.errors": (
        "AlreadyAnsweredError",
        "AuthError",
        "AuthorizationDeniedError",
        "AuthorizationRequiredError",
        "ClientStateError",
        "DeadlineExceededError",
        "DiscoveryError",
        "EraProbeTimeoutError",
        "InputLimitExceededError",
        "InputRequiredError",
        "InputRequiredNotAllowedError",
        "InputRequiredRoundsExceededError",
        "InsufficientScopeError",
        "InvalidInputResponseError",
        "LeaseLostError",
        "IssuerMismatchError",
        "MCPError",
        "MRTRError",
        "MessageTooLargeError",
        "NotInThisEraError",
        "PausedCallBusyError",
        "PausedCallClosedError",
        "PausedCallError",
        "PausedCallExpiredError",
        "PausedCallFormatError",
        "PausedCallInDoubtError",
        "PausedCallIncompleteError",
        "PausedCallMismatchError",
        "PausedCallNotFoundError",
        "PausedCallStoreLockedError",
        "ProcessExitedError",
        "ProtocolError",
        "RedirectError",
        "RegistrationError",
        "RequestStateRejectedError",
        "RequestTimeoutError",
        "ResourceMismatchError",
        "StaleRoundError",
        "SubscriptionLostError",
        "TaskCancelledError",
        "TaskError",
        "TaskFailedError",
        "TaskFormatError",
        "TaskInputRequiredError",
        "TaskLimitExceededError",
        "TaskMismatchError",
        "TaskNotAllowedError",
        "TokenEndpointError",
        "TransportError",
        "UnknownInputKeyError",
    ),
    "mrtr.session": ("ClientSession",),
    "mrtr.session._task": ("Task",),
    "mrtr.session._task_polling": ("TaskPolling",),
    "mrtr.transports": ("StdioServerParameters",),
}

__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
