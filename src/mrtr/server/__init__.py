"""The server half: a minimal `Server` whose handlers may ask, and sealed ``requestState``.

Install with ``pip install 'mrtr[server]'`` (``cryptography`` for the built-in codec,
``uvicorn`` to serve HTTP). Nothing here is imported by ``import mrtr``, and
``cryptography`` is only imported when a state is first sealed or opened.

```python
from mrtr.server import Server, RequestStateSecurity

server = Server("Provisioner", on_list_tools=list_tools, on_call_tool=call_tool)
server.run_stdio()                                   # or: Client(server), uvicorn + ASGI
fleet = Server("fleet", request_state_security=RequestStateSecurity(keys=[key]))
```
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mrtr._lazy import lazy_exports

if TYPE_CHECKING:
    from mrtr.errors import InvalidRequestState as InvalidRequestState
    from mrtr.server._core._bus import NotificationBus as NotificationBus
    from mrtr.server._core._bus_redis import RedisNotificationBus as RedisNotificationBus
    from mrtr.server._sealing._answers import (
        AnswerStore as AnswerStore,
        LegOpening as LegOpening,
        LegRecord as LegRecord,
        LegTakeoverStore as LegTakeoverStore,
    )
    from mrtr.server._mcpserver._app import MCPServer as MCPServer
    from mrtr.server._mcpserver._asks import (
        Elicit as Elicit,
        ElicitUrl as ElicitUrl,
        ListRoots as ListRoots,
        Resolve as Resolve,
        Sample as Sample,
    )
    from mrtr.server._mcpserver._rounds._context import Context as Context
    from mrtr.server._mcpserver._errors import (
        InvalidSignature as InvalidSignature,
        ToolError as ToolError,
    )
    from mrtr.server._mcpserver._outcomes import (
        AcceptedElicitation as AcceptedElicitation,
        CancelledElicitation as CancelledElicitation,
        DeclinedElicitation as DeclinedElicitation,
        ElicitationResult as ElicitationResult,
    )
    from mrtr.server._mcpserver._entries._prompt import (
        AssistantMessage as AssistantMessage,
        UserMessage as UserMessage,
    )
    from mrtr.server._mcpserver._testing import (
        Answers as Answers,
        Preview as Preview,
        RoundRecord as RoundRecord,
        ScriptedClient as ScriptedClient,
        Transcript as Transcript,
        assert_questions_stable as assert_questions_stable,
    )
    from mrtr.server._sealing._codec import (
        AESGCMCodec as AESGCMCodec,
        AESGCMRequestStateCodec as AESGCMRequestStateCodec,
        RequestStateCodec as RequestStateCodec,
    )
    from mrtr.server._core._context import (
        Principal as Principal,
        ServerRequestContext as ServerRequestContext,
    )
    from mrtr.server._http._event_store import EventStore as EventStore
    from mrtr.server._http._event_store_memory import MemoryEventStore as MemoryEventStore
    from mrtr.server._http._event_store_redis import RedisEventStore as RedisEventStore
    from mrtr.server._core._middleware import (
        CallNext as CallNext,
        HandlerResult as HandlerResult,
        ServerMiddleware as ServerMiddleware,
    )
    from mrtr.server._http._lambda import (
        LambdaHandler as LambdaHandler,
        lambda_handler as lambda_handler,
    )
    from mrtr.server._http._resource import ProtectedResource as ProtectedResource
    from mrtr.server._sealing._replay_redis import RedisReplayStore as RedisReplayStore
    from mrtr.server._sealing._security import (
        MemoryReplayStore as MemoryReplayStore,
        ReplayStore as ReplayStore,
        RequestBinding as RequestBinding,
        RequestStateSecurity as RequestStateSecurity,
        authenticated_principal as authenticated_principal,
    )
    from mrtr.server._server import (
        UNSEALED as UNSEALED,
        Server as Server,
        TokenVerifier as TokenVerifier,
    )
    from mrtr.server._tasks._control import TaskControl as TaskControl
    from mrtr.server._tasks._memory import MemoryTaskStore as MemoryTaskStore
    from mrtr.server._tasks._record import TaskRecord as TaskRecord
    from mrtr.server._tasks._redis import RedisTaskStore as RedisTaskStore
    from mrtr.server._tasks._runner import (
        TaskBody as TaskBody,
        TaskRunner as TaskRunner,
    )
    from mrtr.server._tasks._sqlite import SqliteTaskStore as SqliteTaskStore
    from mrtr.server._tasks._store import TaskStore as TaskStore
    from mrtr.server._tasks._worker import TaskWorker as TaskWorker

_EXPORTS: dict[str, tuple[str, ...]] = {
    "mrtr.errors": ("InvalidRequestState",),
    "mrtr.server._sealing._answers": (
        "AnswerStore",
        "LegOpening",
        "LegRecord",
        "LegTakeoverStore",
    ),
    "mrtr.server._core._bus": ("NotificationBus",),
    "mrtr.server._core._bus_redis": ("RedisNotificationBus",),
    "mrtr.server._sealing._codec": ("AESGCMCodec", "AESGCMRequestStateCodec", "RequestStateCodec"),
    "mrtr.server._core._context": ("Principal", "ServerRequestContext"),
    "mrtr.server._http._event_store": ("EventStore",),
    "mrtr.server._http._event_store_memory": ("MemoryEventStore",),
    "mrtr.server._http._event_store_redis": ("RedisEventStore",),
    "mrtr.server._mcpserver._app": ("MCPServer",),
    "mrtr.server._mcpserver._asks": ("Elicit", "ElicitUrl", "ListRoots", "Resolve", "Sample"),
    "mrtr.server._mcpserver._rounds._context": ("Context",),
    "mrtr.server._mcpserver._errors": ("InvalidSignature", "ToolError"),
    "mrtr.server._mcpserver._outcomes": (
        "AcceptedElicitation",
        "CancelledElicitation",
        "DeclinedElicitation",
        "ElicitationResult",
    ),
    "mrtr.server._mcpserver._entries._prompt": ("AssistantMessage", "UserMessage"),
    "mrtr.server._mcpserver._testing": (
        "Answers",
        "Preview",
        "RoundRecord",
        "ScriptedClient",
        "Transcript",
        "assert_questions_stable",
    ),
    "mrtr.server._core._middleware": ("CallNext", "HandlerResult", "ServerMiddleware"),
    "mrtr.server._http._lambda": ("LambdaHandler", "lambda_handler"),
    "mrtr.server._http._resource": ("ProtectedResource",),
    "mrtr.server._sealing._replay_redis": ("RedisReplayStore",),
    "mrtr.server._sealing._security": (
        "MemoryReplayStore",
        "ReplayStore",
        "RequestBinding",
        "RequestStateSecurity",
        "authenticated_principal",
    ),
    "mrtr.server._server": ("UNSEALED", "Server", "TokenVerifier"),
    "mrtr.server._tasks._control": ("TaskControl",),
    "mrtr.server._tasks._memory": ("MemoryTaskStore",),
    "mrtr.server._tasks._record": ("TaskRecord",),
    "mrtr.server._tasks._redis": ("RedisTaskStore",),
    "mrtr.server._tasks._runner": ("TaskBody", "TaskRunner"),
    "mrtr.server._tasks._sqlite": ("SqliteTaskStore",),
    "mrtr.server._tasks._store": ("TaskStore",),
    "mrtr.server._tasks._worker": ("TaskWorker",),
}


def _require_server_extra() -> None:
    """Fail at import, naming the extra, when the server half's dependency is missing.

    Asked with ``find_spec`` (nothing is imported): without it the first sealed round
    would fail deep inside a request, as an internal error the client cannot explain.
    """
    from importlib.util import find_spec

    try:
        found = find_spec("cryptography") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise ImportError(
            "mrtr.server needs the 'server' extra (cryptography seals requestState): "
            "pip install 'mrtr[server]'",
            name="cryptography",
        )


_require_server_extra()

__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
