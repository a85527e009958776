"""A server's -32042 (URL elicitation required): show each URL, and offer to open it and retry.

A 2025-11-25 server may refuse a request until the user has visited a URL (to authorize,
pay, sign in): the error's ``data.elicitations`` lists the URL-mode requests. The URLs are
shown like a URL-mode elicitation (sanitised, host emphasised, nothing opened without a
keypress); on a terminal the person can open one and have the command run again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["URL_ELICITATION_REQUIRED", "ask_retry", "describe", "required_urls"]

URL_ELICITATION_REQUIRED = -32042
RETRIES = 3
"""How many times the person may ask to run the command again after opening the URLs."""


def required_urls(exc: BaseException) -> list[Mapping[str, Any]]:
    """The URL-mode requests an error carries (empty for any other error)."""
    from mrtr.errors import MCPError

    if not isinstance(exc, MCPError) or exc.code != URL_ELICITATION_REQUIRED:
        return []
    data = exc.data if isinstance(exc.data, dict) else {}
    found = data.get("elicitations")
    if not isinstance(found, list):
        return []
    return [e for e in found if isinstance(e, dict) and isinstance(e.get("url"), str)]


def describe(urls: list[Mapping[str, Any]]) -> str:
    """The lines that show each URL (styled marks; made safe when written)."""
    from mrtr.cli._ask import show_url
    from mrtr.cli._terminal import Terminal

    term = Terminal(color=False)
    lines = []
    for request in urls:
        if request.get("message"):
            lines.append(f"  {request['message']}")
        lines.append(f"  the server asks you to open: {show_url(term, str(request['url']))}")
    return "\n".join(lines)


def ask_retry(urls: list[Mapping[str, Any]], *, color: bool | None) -> bool:
    """On a terminal: open the URLs on a keypress, then say whether to run the command again."""
    from mrtr.cli._ask import show_url
    from mrtr.cli._terminal import Terminal

    term = Terminal(color=color)
    try:
        while True:
            choice = (
                term.read_line(
                    "  [o]pen in browser, then retry / [r]etry (done elsewhere) / [q]uit > "
                )
                .strip()
                .lower()
            )
            if choice in ("q", "quit", "!cancel", ""):
                return False
            if choice in ("r", "retry"):
                return True
            if choice in ("o", "open"):
                import webbrowser

                for request in urls:
                    opened = webbrowser.open(str(request["url"]))
                    shown = show_url(term, str(request["url"]))
                    term.write(f"  {'opened' if opened else 'open it by hand'}: {shown}\n")
                term.read_line("  press Enter when you are done there > ")
                return True
    except EOFError:
        return False
    finally:
        term.close()
