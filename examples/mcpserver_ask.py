"""Asking in the body with ``await ctx.ask(...)``, written once for both eras.

    python examples/mcpserver_ask.py

On a 2026-07-28 client an unanswered ask ends the round (the client gets an
`InputRequiredResult`); on the retry the body runs again from the top and the ask
returns the recorded answer. So: compute before the asks, act after the last one. On a
2025-11-25 client the same ask is an ``elicitation/create`` sent mid-call. Asks use the
same keys, pinning and validation as resolvers, and can share a call with them.
"""

from __future__ import annotations

from mrtr.server import AcceptedElicitation, Context, Elicit, MCPServer, Sample

app = MCPServer("Release")


@app.tool()
async def release(version: str, ctx: Context) -> str:
    """Release a version after a confirmation and a changelog line from the model."""
    go = await ctx.ask(Elicit(f"Release {version} to everyone?", bool, key="go"))
    if not isinstance(go, AcceptedElicitation) or not go.data:
        return "Not released."
    (line,) = await ctx.ask_all(
        Sample(f"One changelog line for {version}", max_tokens=60, key="line")
    )
    text = getattr(line.content, "text", "")
    return f"Released {version}: {text}"  # the side effect goes after the last ask


if __name__ == "__main__":
    app.run()
