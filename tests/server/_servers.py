"""Raw-message helpers shared by the server tests, and the server most of them drive.

The server is the kit's Provisioner (`tests.helpers.mrtr_servers.provisioner`), named here
too so that a server test imports what it needs from one place.
"""

from __future__ import annotations

from typing import Any

from tests.helpers.mrtr_servers.provisioner import ASK_REGION, make_server

__all__ = ["ALL_CAPS", "ASK_REGION", "MODERN", "make_server", "meta", "request"]

MODERN = "2026-07-28"
ALL_CAPS: dict[str, Any] = {"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {}}


def meta(caps: dict[str, Any] | None = None, version: str = MODERN, **extra: Any) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": ALL_CAPS if caps is None else caps,
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
        **extra,
    }


def request(
    method: str,
    params: dict[str, Any] | None = None,
    *,
    id: int | str = 1,
    modern: bool = True,
    caps: dict[str, Any] | None = None,
    **meta_extra: Any,
) -> dict[str, Any]:
    p = dict(params or {})
    if modern:
        p["_meta"] = {**meta(caps), **meta_extra}
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
    if p:
        message["params"] = p
    return message
