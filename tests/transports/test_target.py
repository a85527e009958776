"""`transport_for`: what a client can connect to, resolved in the transports layer."""

from __future__ import annotations

import pytest

from mrtr.transports import (
    MemoryTransport,
    StdioServerParameters,
    StdioTransport,
    SupportsClientTransport,
    Transport,
    create_memory_transport_pair,
    transport_for,
)
from mrtr.transports.http import StreamableHTTPTransport


class _InProcess:
    def __init__(self) -> None:
        self.end, _ = create_memory_transport_pair()

    def client_transport(self) -> Transport:
        return self.end


def test_each_kind_of_target_gets_its_transport() -> None:
    http = transport_for("http://127.0.0.1:9/mcp", max_message_size=10, headers={"X-A": "1"})
    assert isinstance(http, StreamableHTTPTransport) and http.url == "http://127.0.0.1:9/mcp"
    stdio = transport_for(StdioServerParameters("server"), max_message_size=10)
    assert isinstance(stdio, StdioTransport) and stdio.max_message_size == 10
    end, _ = create_memory_transport_pair()
    assert transport_for(end, max_message_size=10) is end
    server = _InProcess()
    assert isinstance(server, SupportsClientTransport)
    resolved = transport_for(server, max_message_size=10)
    assert isinstance(resolved, MemoryTransport) and resolved is server.end


def test_other_targets_are_refused() -> None:
    with pytest.raises(TypeError, match="int"):
        transport_for(42, max_message_size=10)  # type: ignore[arg-type]
