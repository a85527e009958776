"""Protocol versions, reserved `_meta` keys and JSON-RPC error codes."""

from __future__ import annotations

from typing import Final

__all__ = [
    "BASE64_HEADER_PREFIX",
    "BASE64_HEADER_SUFFIX",
    "CLIENT_CAPABILITIES_META_KEY",
    "CLIENT_INFO_META_KEY",
    "HEADER_MISMATCH",
    "INPUT_REQUIRED_METHODS",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "JSONRPC_VERSION",
    "LATEST_PROTOCOL_VERSION",
    "LEGACY_PROTOCOL_VERSIONS",
    "LOG_LEVEL_META_KEY",
    "META_CLIENT_CAPABILITIES",
    "META_CLIENT_INFO",
    "META_LOG_LEVEL",
    "META_PROTOCOL_VERSION",
    "META_SERVER_INFO",
    "METHOD_NOT_FOUND",
    "MISSING_REQUIRED_CLIENT_CAPABILITY",
    "MODERN_PROTOCOL_VERSIONS",
    "PARSE_ERROR",
    "PROTOCOL_VERSION_META_KEY",
    "SERVER_INFO_META_KEY",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "UNSUPPORTED_PROTOCOL_VERSION",
]

JSONRPC_VERSION: Final = "2.0"
"""The ``jsonrpc`` member of every message."""

LATEST_PROTOCOL_VERSION: Final = "2026-07-28"
"""The newest protocol version mrtr speaks: the multi-round-trip era."""
MODERN_PROTOCOL_VERSIONS: Final[tuple[str, ...]] = ("2026-07-28",)
"""Versions without `initialize`: every request carries the `_meta` envelope. Newest first."""
LEGACY_PROTOCOL_VERSIONS: Final[tuple[str, ...]] = (
    "2025-11-25",
    "2025-06-18",
    "2025-03-26",
    "2024-11-05",
)
"""Versions negotiated by `initialize`, newest first."""
SUPPORTED_PROTOCOL_VERSIONS: Final[tuple[str, ...]] = (
    *MODERN_PROTOCOL_VERSIONS,
    *LEGACY_PROTOCOL_VERSIONS,
)
"""Every version mrtr negotiates, newest first."""

META_PROTOCOL_VERSION: Final = "io.modelcontextprotocol/protocolVersion"
"""The `_meta` key that carries a 2026-07-28 request's protocol version."""
META_CLIENT_CAPABILITIES: Final = "io.modelcontextprotocol/clientCapabilities"
"""The `_meta` key that carries the client's capabilities on every 2026-07-28 request."""
META_CLIENT_INFO: Final = "io.modelcontextprotocol/clientInfo"
"""The `_meta` key that carries the client's name and version."""
META_LOG_LEVEL: Final = "io.modelcontextprotocol/logLevel"
"""The `_meta` key that carries the log level the client asked for (no `logging/setLevel`)."""
META_SERVER_INFO: Final = "io.modelcontextprotocol/serverInfo"
"""The `_meta` key of a result that names the server that produced it."""
META_REPLAYABLE: Final = "io.mrtr/replayable"
"""The `_meta` key of an `InputRequiredResult` whose next leg may be re-sent as is.

``true`` when the server keeps that leg's answer (single-use state with kept answers):
a client that lost the answer may send the very same leg again and gets the same
answer, with nothing run twice. Without it, a re-sent leg may run twice or be refused."""
LEG_RUNNING_REASON: Final = "leg_running"
"""The ``data.reason`` of the -32000 a server answers to a re-sent leg still running
(on it or another instance): ask again later (``data.retryAfterMs``)."""

# the official SDK's spellings of the same keys (porting is a rename)
PROTOCOL_VERSION_META_KEY: Final = META_PROTOCOL_VERSION
"""The official SDK's name for `META_PROTOCOL_VERSION`."""
CLIENT_CAPABILITIES_META_KEY: Final = META_CLIENT_CAPABILITIES
"""The official SDK's name for `META_CLIENT_CAPABILITIES`."""
CLIENT_INFO_META_KEY: Final = META_CLIENT_INFO
"""The official SDK's name for `META_CLIENT_INFO`."""
LOG_LEVEL_META_KEY: Final = META_LOG_LEVEL
"""The official SDK's name for `META_LOG_LEVEL`."""
SERVER_INFO_META_KEY: Final = META_SERVER_INFO
"""The official SDK's name for `META_SERVER_INFO`."""

BASE64_HEADER_PREFIX: Final = "=?base64?"
BASE64_HEADER_SUFFIX: Final = "?="
"""An ``Mcp-Param-*`` header value that is not plain ASCII travels as
``=?base64?<base64 of its UTF-8>?=``; client and server both use these two constants."""

INPUT_REQUIRED_METHODS: Final = frozenset({"tools/call", "prompts/get", "resources/read"})
"""The only methods whose result may be an `InputRequiredResult`."""

PARSE_ERROR: Final = -32700
"""JSON-RPC: the message was not JSON."""
INVALID_REQUEST: Final = -32600
"""JSON-RPC: JSON, but not a request."""
METHOD_NOT_FOUND: Final = -32601
"""JSON-RPC: the peer has no such method (or not in this era)."""
INVALID_PARAMS: Final = -32602
"""JSON-RPC: bad parameters; also a refused ``requestState``."""
INTERNAL_ERROR: Final = -32603
"""JSON-RPC: the handler failed (its message is never sent)."""
HEADER_MISMATCH: Final = -32020
"""MCP: the ``Mcp-Param-*`` headers disagree with the arguments they mirror."""
MISSING_REQUIRED_CLIENT_CAPABILITY: Final = -32021
"""MCP: the request needs a client capability the client did not declare."""
UNSUPPORTED_PROTOCOL_VERSION: Final = -32022
"""MCP: the server does not speak the request's protocol version."""
