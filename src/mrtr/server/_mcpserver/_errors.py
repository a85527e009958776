"""The errors a server author meets: `InvalidSignature` at registration, `ToolError` in a tool."""

from __future__ import annotations

from mrtr._lazy import publish
from mrtr.errors import MRTRError

__all__ = ["CallFailed", "InvalidSignature", "ToolError"]


class InvalidSignature(MRTRError):
    """A decorated function or a resolver cannot be honoured as declared.

    Raised at decoration time, never mid-call: a dependency that cannot be resolved, a
    cycle, a question type the elicitation schema cannot express, a duplicate key.
    """


class ToolError(MRTRError):
    """Raise in a tool (or a resolver) to end the call with an ``is_error`` result.

    The message reaches the model as ``Error executing tool <name>: <message>``; any other
    exception reaches it as ``Error executing tool <name>`` only (the message may hold
    secrets, so it goes to the server log).
    """


class CallFailed(Exception):
    """The engine stopped a call for a reason the caller must see (private).

    Tools turn it into an ``is_error`` result; prompts and resources into a JSON-RPC
    ``-32603`` error whose ``data`` carries `reason`.
    """

    def __init__(self, message: str, reason: str, **data: object) -> None:
        super().__init__(message)
        self.message = message
        self.reason = reason
        self.data: dict[str, object] = {"reason": reason, **data}


publish("mrtr.server", InvalidSignature, ToolError)
