"""The official SDK's (mcp==2.3.0) servers as peers, and how the tests start them.

One module per server, all run by one script, `tests.helpers.official.peer`:

- `interop` (``interop``): the low-level ``Server``: tools, prompts and resources that
  ask, in both eras, and the legacy back-channel;
- `features` (``features``): an ``MCPServer`` with the SDK's own features (progress,
  back-channel elicitation, ``x-mcp-header`` parameters);
- `multi_round` (``lowlevel``, ``high``): hand-built multi-round-trip results, and an
  ``MCPServer`` with dependency-injected elicitation;
- `changes` (``changes``): listen, subscriptions, caching hints, logging, big results.

`patient` stands apart (a stdio script run by path): its tool pings the client while an
elicitation is open. `stdio_params` gives a Client target that starts one server per
client; `http_peer` runs every server in one uvicorn subprocess on 127.0.0.1.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from mrtr.transports import StdioServerParameters
from tests.helpers.launch import ROOT, module_command, running

__all__ = ["PEER", "ROOT", "http_peer", "peer_command", "stdio_params"]

PEER = "tests.helpers.official.peer"


def peer_command(*args: str) -> list[str]:
    """The argv that runs the peer script with ``args`` (run it from `ROOT`)."""
    return module_command(PEER, *args)


def stdio_params(server: str) -> StdioServerParameters:
    """A Client target: the official server ``server`` over stdio, one process per client."""
    command, *args = peer_command("stdio", "--server", server)
    return StdioServerParameters(command=command, args=args, cwd=str(ROOT))


@contextmanager
def http_peer() -> Iterator[str]:
    """Every official server over streamable HTTP; yields the base URL.

    A server is at ``f"{base}/{name}/mcp"``. The process is terminated (and waited for)
    when the block ends.
    """
    with running(peer_command("http")) as base:
        yield base
