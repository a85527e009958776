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

from mrtr.errors import InvalidRequestState
from mrtr.server._codec import AESGCMCodec, RequestStateCodec
from mrtr.server._context import Principal, ServerRequestContext
from mrtr.server._replay_redis import RedisReplayStore
from mrtr.server._resource import ProtectedResource
from mrtr.server._security import (
    MemoryReplayStore,
    ReplayStore,
    RequestBinding,
    RequestStateSecurity,
    authenticated_principal,
)
from mrtr.server._server import UNSEALED, Server, TokenVerifier

__all__ = [
    "UNSEALED",
    "AESGCMCodec",
    "InvalidRequestState",
    "MemoryReplayStore",
    "Principal",
    "ProtectedResource",
    "RedisReplayStore",
    "ReplayStore",
    "RequestBinding",
    "RequestStateCodec",
    "RequestStateSecurity",
    "Server",
    "ServerRequestContext",
    "TokenVerifier",
    "authenticated_principal",
]
