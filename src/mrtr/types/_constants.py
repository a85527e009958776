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

LATEST_PROTOCOL_VERSION: Final = "2026-07-28"
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

META_PROTOCOL_VERSION: Final = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_CAPABILITIES: Final = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO: Final = "io.modelcontextprotocol/clientInfo"
META_LOG_LEVEL: Final = "io.modelcontextprotocol/logLevel"
META_SERVER_INFO: Final = "io.modelcontextprotocol/serverInfo"

# the official SDK's spellings of the same keys (porting is a rename)
PROTOCOL_VERSION_META_KEY: Final = META_PROTOCOL_VERSION
CLIENT_CAPABILITIES_META_KEY: Final = META_CLIENT_CAPABILITIES
CLIENT_INFO_META_KEY: Final = META_CLIENT_INFO
LOG_LEVEL_META_KEY: Final = META_LOG_LEVEL
SERVER_INFO_META_KEY: Final = META_SERVER_INFO

BASE64_HEADER_PREFIX: Final = "=?base64?"
BASE64_HEADER_SUFFIX: Final = "?="
"""An ``Mcp-Param-*`` header value that is not plain ASCII travels as
``=?base64?<base64 of its UTF-8>?=``; client and server both use these two constants."""

INPUT_REQUIRED_METHODS: Final = frozenset({"tools/call", "prompts/get", "resources/read"})
"""The only methods whose result may be an `InputRequiredResult`."""

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603
HEADER_MISMATCH: Final = -32020
MISSING_REQUIRED_CLIENT_CAPABILITY: Final = -32021
UNSUPPORTED_PROTOCOL_VERSION: Final = -32022
