"""The transport contract's public seams: `lifespan()` and `SupportsResponseSink`."""

from __future__ import annotations

import sys
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest

from mrtr.session._connection import JSONRPCConnection
from mrtr.transports import (
    JSONObject,
    MemoryTransport,
    RequestFailed,
    StdioServerParameters,
    StdioTransport,
    SupportsResponseSink,
    Transport,
    create_memory_transport_pair,
)

pytestmark = pytest.mark.anyio


class Delegating(Transport):
    """A wrapper that enters its inner transport in its own lifespan (the public seam)."""

    def __init__(self, inner: Transport) -> None:
        self.inner = inner
        self.events: list[str] = []

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        self.events.append("enter")
        async with self.inner:
            yield
        self.events.append("exit")

    async def send(self, message: JSONObject) -> None:
        await self.inner.send(message)

    async def receive(self) -> JSONObject | RequestFailed:
        return await self.inner.receive()

    async def aclose(self) -> None:
        self.events.append("aclose")
        await self.inner.aclose()


async def test_a_subclass_implements_the_public_lifespan() -> None:
    client_end, server_end = create_memory_transport_pair()
    wrapper = Delegating(client_end)
    async with wrapper, server_end:
        assert wrapper.events == ["enter"]
        await wrapper.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        received = await server_end.receive()
        assert isinstance(received, dict) and received["method"] == "notifications/initialized"
    assert wrapper.events == ["enter", "aclose", "exit"]
    assert client_end.closed


async def test_the_old_private_lifespan_still_works_and_warns() -> None:
    with pytest.warns(DeprecationWarning, match=r"override lifespan\(\) instead"):

        class Old(Transport):
            entered = False

            @asynccontextmanager
            async def _lifespan(self) -> AsyncIterator[None]:
                Old.entered = True
                yield

            async def send(self, message: JSONObject) -> None:
                raise NotImplementedError

            async def receive(self) -> JSONObject | RequestFailed:
                raise NotImplementedError

            async def aclose(self) -> None:
                pass

    async with Old():
        assert Old.entered


def test_a_transport_with_a_public_lifespan_does_not_warn() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")

        class New(Delegating):
            pass

    assert New.lifespan is Delegating.lifespan


def test_only_a_transport_that_reads_in_callbacks_offers_a_sink() -> None:
    stdio = StdioTransport(StdioServerParameters(command=sys.executable, args=["-c", "pass"]))
    client_end, _ = create_memory_transport_pair()
    assert isinstance(stdio, SupportsResponseSink)
    assert not isinstance(client_end, SupportsResponseSink)
    assert not isinstance(Delegating(stdio), SupportsResponseSink)  # no silent forwarding


class Sinking(Delegating):
    """A wrapper that says it takes a sink: the connection sets it and clears it."""

    def __init__(self, inner: MemoryTransport) -> None:
        super().__init__(inner)
        self.sinks: list[object] = []

    def set_response_sink(self, sink: object) -> None:
        self.sinks.append(sink)


async def test_the_connection_sets_a_sink_only_where_one_is_offered() -> None:
    client_end, server_end = create_memory_transport_pair()
    wrapper = Sinking(client_end)
    with anyio.fail_after(30):
        async with wrapper, server_end:
            async with JSONRPCConnection(wrapper):
                assert len(wrapper.sinks) == 1 and callable(wrapper.sinks[0])
            assert wrapper.sinks[-1] is None
            async with JSONRPCConnection(client_end):  # a MemoryTransport: nothing to set
                pass
