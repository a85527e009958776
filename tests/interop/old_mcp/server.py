"""A stdio server on ``mcp`` 1.8.1 (an old official SDK), for the opt-in old-peer test.

Runs only in the separate environment the ``interop_old_mcp`` nox session builds (it
imports the old SDK's ``FastMCP``, which ``mcp`` 2.x does not have).
"""

from mcp.server.fastmcp import FastMCP  # type: ignore[attr-defined,import-not-found,unused-ignore]

server = FastMCP("old-mcp")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


if __name__ == "__main__":
    server.run("stdio")
