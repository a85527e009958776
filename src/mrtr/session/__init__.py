"""mrtr.session: `ClientSession`, one MCP connection in either era, without the automatic loop.

The package holds the session's parts, each a separate object: the JSON-RPC connection
(`_connection`), the era's envelope (`_envelope`), the legacy back-channel
(`_backchannel`, `_callbacks`), the legs of a multi-round call (`_legs`), change events
and ``subscriptions/listen`` streams (`_events`, `_listen`) and what a callback is told
(`_context`). `ClientSession` itself is one class in `_session`. Names load on first use
(`mrtr._lazy`): the client imports the light parts (its state enum, the callback
context) at import time and the session only when it opens.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mrtr._lazy import lazy_exports

if TYPE_CHECKING:
    from mrtr.session._state import SessionState as SessionState
    from mrtr.session._context import ClientRequestContext as ClientRequestContext
    from mrtr.session._session import ClientSession as ClientSession

_EXPORTS: dict[str, tuple[str, ...]] = {
    "mrtr.session._state": ("SessionState",),
    "mrtr.session._context": ("ClientRequestContext",),
    "mrtr.session._session": ("ClientSession",),
}

__all__, _exported, __dir__ = lazy_exports(__name__, _EXPORTS)


def __getattr__(name: str) -> Any:
    """An exported name, or another public name the `mrtr.session` module had.

    Before it was a package, ``mrtr.session`` was the module of `ClientSession`, and
    its other public names (``call_params``, ``ProgressCallback``, ...) could be
    imported from it; they still can, from the class's module.
    """
    try:
        return _exported(name)
    except AttributeError:
        if name.startswith("_"):
            raise
        from mrtr.session import _session

        if not hasattr(_session, name):
            raise
        return getattr(_session, name)
