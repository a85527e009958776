"""Transports: move JSON-RPC messages between the client (or server) and its peer.

The HTTP transport lives in `mrtr.transports.http` and is imported from there explicitly,
so that httpx is only imported when it is used.
"""

from __future__ import annotations

from mrtr.transports._base import (
    DEFAULT_MAX_MESSAGE_SIZE,
    JSONObject,
    RequestFailed,
    RequestId,
    Transport,
)
from mrtr.transports._memory import MemoryTransport, create_memory_transport_pair
from mrtr.transports._stdio import StderrSink, StdioTransport
from mrtr.transports._stdio_params import StdioServerParameters, default_environment
from mrtr.transports._target import ClientTarget, SupportsClientTransport, transport_for

__all__ = [
    "DEFAULT_MAX_MESSAGE_SIZE",
    "ClientTarget",
    "JSONObject",
    "MemoryTransport",
    "RequestFailed",
    "RequestId",
    "StderrSink",
    "StdioServerParameters",
    "StdioTransport",
    "SupportsClientTransport",
    "Transport",
    "create_memory_transport_pair",
    "default_environment",
    "transport_for",
]
