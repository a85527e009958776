"""The official SDK's stdio spelling: ``async with stdio_server() as (read, write)``.

Low-level serving code written for the official SDK ports by a rename::

    from mrtr.server.stdio import stdio_server  # was: from mcp.server.stdio import ...

    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())

It is a thin shell over what `Server.run_stdio` does (the same framing, size cap and
back-pressure); new code can call ``server.run_stdio()`` directly.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from mrtr.transports import DEFAULT_MAX_MESSAGE_SIZE

__all__ = ["stdio_server"]


@asynccontextmanager
async def stdio_server(
    *, max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE
) -> AsyncIterator[tuple[Any, Any]]:
    """This process's stdin and stdout, as the streams `Server.run` serves.

    Args:
        max_message_size: the cap on one incoming line, in bytes (a longer one is
            answered with an error, and the connection lives on).

    Yields:
        ``(read_stream, write_stream)``: what to pass to ``server.run(...)``.
    """
    from mrtr.server._stream._shells import open_stdio

    async with open_stdio(max_message_size=max_message_size) as streams:
        yield streams
