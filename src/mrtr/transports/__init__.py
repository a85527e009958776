"""Transports: move JSON-RPC messages between the client (or server) and its peer.

Names load on first use (`mrtr._lazy`). The HTTP transport lives in
`mrtr.transports.http` and is imported from there explicitly, so that httpx is only
imported when it is used; `transport_for` resolves what `Client` is given to a transport.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mrtr._lazy import lazy_exports

if TYPE_CHECKING:
    from mrtr.transports._base import (
        DEFAULT_MAX_MESSAGE_SIZE as DEFAULT_MAX_MESSAGE_SIZE,
        JSONObject as JSONObject,
        RequestFailed as RequestFailed,
        RequestId as RequestId,
        SupportsResponseSink as SupportsResponseSink,
        Transport as Transport,
    )
    from mrtr.transports._memory import (
        MemoryTransport as MemoryTransport,
        create_memory_transport_pair as create_memory_transport_pair,
    )
    from mrtr.transports._stdio import StdioTransport as StdioTransport
    from mrtr.transports._stdio_params import (
        StdioServerParameters as StdioServerParameters,
        default_environment as default_environment,
    )
    from mrtr.transports._stdio_stderr import StderrSink as StderrSink
    from mrtr.transports._target import (
        ClientTarget as ClientTarget,
        SupportsClientTransport as SupportsClientTransport,
        transport_for as transport_for,
    )

_EXPORTS: dict[str, tuple[str, ...]] = {
    "mrtr.transports._base": (
        "DEFAULT_MAX_MESSAGE_SIZE",
        "JSONObject",
        "RequestFailed",
        "RequestId",
        "SupportsResponseSink",
        "Transport",
    ),
    "mrtr.transports._memory": ("MemoryTransport", "create_memory_transport_pair"),
    "mrtr.transports._stdio": ("StdioTransport",),
    "mrtr.transports._stdio_stderr": ("StderrSink",),
    "mrtr.transports._stdio_params": ("StdioServerParameters", "default_environment"),
    "mrtr.transports._target": ("ClientTarget", "SupportsClientTransport", "transport_for"),
}

__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
