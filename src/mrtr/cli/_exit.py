"""Exit codes: one stable number per kind of outcome, mapped from mrtr's exception tree.

Scripts branch on these numbers, so they never change meaning. The table is printed by
``mrtr --help``; `exit_code_for` is the only place that maps an exception to a code.
"""

from __future__ import annotations

import re
from typing import Any

from mrtr.errors import MRTRError

OK = 0
INTERNAL = 1
USAGE = 2
AUTH = 3
UNREACHABLE = 4
TOOL_ERROR = 5
INPUT_REQUIRED = 6
PROTOCOL = 7
TIMEOUT = 8
BOUND_EXCEEDED = 9
STATE_REJECTED = 10
ALREADY_FINISHED = 11
INTERRUPTED = 130

EXIT_CODES_HELP = """\
exit codes:
  0    ok
  1    internal error (a bug in mrtr)
  2    usage: bad flags, unknown server or tool, invalid arguments or answers, config error
  3    auth: HTTP 401/403, or login needed
  4    unreachable: connection refused, DNS, TLS, the stdio server failed or exited
  5    the tool answered with isError (or a prompt/resource/tool the server refused)
  6    input required: a request was left unanswered, or the call was paused (--pause)
  7    protocol or server error: a JSON-RPC error, a peer that breaks the protocol
  8    timeout: --request-timeout or the whole-call --timeout
  9    a bound was exceeded: --max-rounds, input limits, message size
  10   the server rejected the paused state on resume, or the task was cancelled: start over
  11   resume refused: that paused call already finished (its result is in the file)
  130  interrupted (Ctrl-C)
"""

NAMES = {
    OK: "ok",
    INTERNAL: "internal",
    USAGE: "usage",
    AUTH: "auth",
    UNREACHABLE: "unreachable",
    TOOL_ERROR: "tool_error",
    INPUT_REQUIRED: "input_required",
    PROTOCOL: "protocol",
    TIMEOUT: "timeout",
    BOUND_EXCEEDED: "bound_exceeded",
    STATE_REJECTED: "state_rejected",
    ALREADY_FINISHED: "already_finished",
    INTERRUPTED: "interrupted",
}

_HTTP_AUTH = re.compile(r"\bHTTP (401|403)\b")
_AUTH_REFUSAL = re.compile(r"^(Unauthorized|Forbidden)\b")


class CLIError(MRTRError):
    """A failure the command line reports with a chosen exit code."""

    exit_code = INTERNAL

    def __init__(self, message: str, *, details: str | None = None) -> None:
        super().__init__(message)
        self.details = details


class UsageError(CLIError):
    """Bad flags, an unknown server or tool, invalid arguments or answers (exit 2)."""

    exit_code = USAGE


class AuthRequiredError(CLIError):
    """The server wants credentials the command line does not have (exit 3)."""

    exit_code = AUTH


class InputUnansweredError(CLIError):
    """An input request had no answer and nobody could be asked (exit 6)."""

    exit_code = INPUT_REQUIRED

    def __init__(self, message: str, *, pending: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.pending = pending or {}


class ConnectTimeoutError(CLIError):
    """The server did not finish the handshake within --connect-timeout (exit 8)."""

    exit_code = TIMEOUT


class ServerExitedError(CLIError):
    """The stdio server exited: its exit code says why better than the broken pipe (exit 4)."""

    exit_code = UNREACHABLE


class AlreadyFinishedError(CLIError):
    """``mrtr resume`` of a call that already finished: never sent twice unasked (exit 11)."""

    exit_code = ALREADY_FINISHED

    def __init__(self, message: str, *, result: Any = None) -> None:
        super().__init__(message)
        self.result = result


class RoundsExceededError(CLIError):
    """More input-required rounds than --max-rounds allows (exit 9)."""

    exit_code = BOUND_EXCEEDED


class RestartNeededError(CLIError):
    """The paused call cannot go on (state refused, expired, another server): exit 10."""

    exit_code = STATE_REJECTED


def exit_code_for(exc: BaseException) -> int:
    """The exit code for an exception that ended a command."""
    from mrtr import errors

    if isinstance(exc, KeyboardInterrupt):
        return INTERRUPTED
    if isinstance(exc, CLIError):
        return exc.exit_code
    if not isinstance(exc, MRTRError):
        return INTERNAL
    status = getattr(exc, "status", getattr(exc, "status_code", None))
    if status in (401, 403) or _HTTP_AUTH.search(str(exc)):
        return AUTH
    if isinstance(exc, errors.MCPError) and _AUTH_REFUSAL.match(exc.message):
        return AUTH  # an HTTP 401/403 whose body carried a JSON-RPC error
    table: tuple[tuple[type[BaseException], int], ...] = (
        (errors.AuthError, AUTH),
        (errors.RequestStateRejectedError, STATE_REJECTED),
        (errors.PausedCallFormatError, USAGE),
        (errors.PausedCallIncompleteError, INPUT_REQUIRED),
        (errors.PausedCallExpiredError, STATE_REJECTED),
        (errors.PausedCallMismatchError, STATE_REJECTED),
        (errors.TaskFormatError, USAGE),
        (errors.TaskMismatchError, STATE_REJECTED),
        (errors.TaskInputRequiredError, INPUT_REQUIRED),
        (errors.TaskLimitExceededError, BOUND_EXCEEDED),
        (errors.TaskCancelledError, STATE_REJECTED),  # it cannot go on: start over
        (errors.ClientStateError, USAGE),
        (errors.InputRequiredRoundsExceededError, BOUND_EXCEEDED),
        (errors.InputLimitExceededError, BOUND_EXCEEDED),
        (errors.MessageTooLargeError, BOUND_EXCEEDED),
        (errors.DeadlineExceededError, TIMEOUT),
        (errors.RequestTimeoutError, TIMEOUT),
        (errors.TransportError, UNREACHABLE),
        (errors.MCPError, PROTOCOL),
        (errors.ProtocolError, PROTOCOL),
        (errors.InputRequiredError, PROTOCOL),
    )
    for kind, code in table:
        if isinstance(exc, kind):
            return code
    return INTERNAL
