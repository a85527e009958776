"""One exception tree for the whole library.

```
MRTRError
├── MCPError                          the server answered with a JSON-RPC error
│   ├── RequestStateRejectedError     -32602 "Invalid or expired requestState": start over
│   └── TaskFailedError               a task (tasks extension) ended failed with this
│                                     JSON-RPC error (.task_id)
├── InputRequiredError                the multi-round-trip loop could not finish
│   ├── InputRequiredRoundsExceededError   carries .max_rounds and .last
│   ├── InputRequiredNotAllowedError       an InputRequiredResult reached a caller that did
│   │                                      not opt in (pass allow_input_required=True)
│   ├── InputLimitExceededError            a hostile round broke a limit (.limit, .value)
│   ├── InvalidInputResponseError          a callback answered with the wrong kind (.key)
│   └── DeadlineExceededError              the whole exchange ran past its time budget
│                                          (also a TimeoutError)
├── RequestTimeoutError               one request got no answer in time (also a TimeoutError)
│   └── EraProbeTimeoutError          mode="auto" got no handshake answer: try mode="legacy"
├── ProtocolError                     the peer broke the protocol (bad JSON, bad result, ...)
├── TransportError                    the connection failed or closed
│   ├── MessageTooLargeError          one message was over the size cap
│   ├── RedirectError                 an HTTP redirect left the server's origin (.location)
│   └── ProcessExitedError            the stdio server process exited (carries .returncode)
├── SubscriptionLostError             a subscriptions/listen stream ended without the
│                                     server's graceful close: listen again and refetch
├── ClientStateError                  the client was misused: wrong state (not opened, closed)
│   │                                 or a flow fed the wrong answers (also a RuntimeError)
│   └── NotInThisEraError             the method does not exist in the negotiated era
│                                     (ping or resources/subscribe on 2026-07-28, listen
│                                     on a legacy connection); raised without a round trip
├── AuthError                         the server wants authorization mrtr could not get
│   ├── AuthorizationRequiredError    a login is needed (no token, no authorizer, final 401)
│   ├── DiscoveryError                no usable protected-resource / server metadata
│   │   ├── ResourceMismatchError     the metadata's resource does not cover the server URL
│   │   └── IssuerMismatchError       metadata or redirect named another issuer (rejected)
│   ├── RegistrationError             the authorization server refused to register us
│   ├── AuthorizationDeniedError      the authorization redirect carried an error
│   ├── TokenEndpointError            the token endpoint refused (.error, .description)
│   └── InsufficientScopeError        403 insufficient_scope after the step-ups allowed
├── PausedCallError                   a paused call cannot be read, answered or resumed
│   ├── PausedCallFormatError          the stored JSON is not a paused call this version reads
│   ├── PausedCallMismatchError        resumed on another era or server (.field)
│   ├── PausedCallIncompleteError      resumed before every request was answered (.missing)
│   ├── PausedCallNotFoundError        no such id in the store (or purged)
│   ├── PausedCallExpiredError         past its expires_at
│   ├── PausedCallClosedError          done, failed or cancelled already (.status)
│   ├── AlreadyAnsweredError           another writer answered these keys first (.keys)
│   ├── UnknownInputKeyError           an answer for a key the round did not ask (.key)
│   ├── StaleRoundError                the answer targets a round the call has left
│   ├── PausedCallBusyError            another worker holds the claim (.lease_until)
│   ├── PausedCallStoreLockedError     the store's database stayed locked (.retryable, retry)
│   ├── PausedCallInDoubtError         the retry may have reached the server (.sent_at)
│   └── LeaseLostError                 the claim's fence is stale: another worker took over
├── TaskError                         a task (the tasks extension) did not give a result
│   ├── TaskCancelledError            the task was cancelled (.status_message)
│   ├── TaskNotAllowedError           a task reached a caller that did not opt in
│   │                                 (pass allow_task=True, or use Client)
│   ├── TaskInputRequiredError        .result() on a task that waits for answers (.task)
│   ├── TaskLimitExceededError        a task broke a client limit (.limit, .value)
│   ├── TaskFormatError               a saved task handle this version cannot read
│   └── TaskMismatchError             a task handle used with another server (.field)
└── InvalidRequestState               (server) a sealed requestState failed verification
```

Every error carries the context a person debugging needs as attributes. A callback's own
exception is never wrapped: it reaches the caller as itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mrtr.types._constants import INVALID_PARAMS

if TYPE_CHECKING:
    from mrtr.types import ErrorData, InputRequiredResult

__all__ = [
    "AlreadyAnsweredError",
    "AuthError",
    "AuthorizationDeniedError",
    "AuthorizationRequiredError",
    "ClientStateError",
    "DeadlineExceededError",
    "DiscoveryError",
    "EraProbeTimeoutError",
    "InputLimitExceededError",
    "InputRequiredError",
    "InputRequiredNotAllowedError",
    "InputRequiredRoundsExceededError",
    "InsufficientScopeError",
    "InvalidInputResponseError",
    "InvalidRequestState",
    "IssuerMismatchError",
    "LeaseLostError",
    "MCPError",
    "MRTRError",
    "MessageTooLargeError",
    "NotInThisEraError",
    "PausedCallBusyError",
    "PausedCallClosedError",
    "PausedCallError",
    "PausedCallExpiredError",
    "PausedCallFormatError",
    "PausedCallInDoubtError",
    "PausedCallIncompleteError",
    "PausedCallMismatchError",
    "PausedCallNotFoundError",
    "PausedCallStoreLockedError",
    "ProcessExitedError",
    "ProtocolError",
    "RedirectError",
    "RegistrationError",
    "RequestStateRejectedError",
    "RequestTimeoutError",
    "ResourceMismatchError",
    "StaleRoundError",
    "SubscriptionLostError",
    "TaskCancelledError",
    "TaskError",
    "TaskFailedError",
    "TaskFormatError",
    "TaskInputRequiredError",
    "TaskLimitExceededError",
    "TaskMismatchError",
    "TaskNotAllowedError",
    "TokenEndpointError",
    "TransportError",
    "UnknownInputKeyError",
]

INVALID_REQUEST_STATE_MESSAGE = "Invalid or expired requestState"


class MRTRError(Exception):
    """The root of every error mrtr raises on its own behalf."""


class MCPError(MRTRError):
    """The server answered a request with a JSON-RPC error.

    Attributes:
        code: the JSON-RPC error code.
        message: the error message as the server wrote it.
        data: the error's ``data`` member, if any.
        method: the JSON-RPC method of the request that failed, when known.
    """

    def __init__(
        self, code: int, message: str, data: Any = None, *, method: str | None = None
    ) -> None:
        super().__init__(f"{message} (code {code})" + (f" [{method}]" if method else ""))
        self.code = code
        self.message = message
        self.data = data
        self.method = method

    @classmethod
    def from_error_data(cls, error: ErrorData, *, method: str | None = None) -> MCPError:
        """Build the most specific error for a JSON-RPC error object."""
        if error.code == INVALID_PARAMS and error.message == INVALID_REQUEST_STATE_MESSAGE:
            return RequestStateRejectedError(error.code, error.message, error.data, method=method)
        return cls(error.code, error.message, error.data, method=method)

    @property
    def error(self) -> ErrorData:
        """The error as a wire model, for code written against the official SDK."""
        from mrtr.types import ErrorData

        return ErrorData(code=self.code, message=self.message, data=self.data)


class RequestStateRejectedError(MCPError):
    """The server refused the echoed requestState (tampered, expired or foreign).

    The flow cannot continue: start the call over without inputResponses or requestState.
    """


class TaskFailedError(MCPError):
    """The task ended ``failed``: its JSON-RPC error is this error's code, message and data.

    An `MCPError`, so code that handles a refused call handles a failed task the same way.

    Attributes:
        task_id: the task.
        status_message: the server's ``statusMessage``, if any.
    """

    def __init__(
        self,
        task_id: str,
        code: int,
        message: str,
        data: Any = None,
        *,
        status_message: str | None = None,
        method: str | None = None,
    ) -> None:
        super().__init__(code, message, data, method=method)
        self.task_id = task_id
        self.status_message = status_message


class InputRequiredError(MRTRError):
    """A multi-round-trip exchange could not finish."""


class InputRequiredRoundsExceededError(InputRequiredError, RuntimeError):
    """The server kept answering InputRequiredResult past the round cap.

    Also a `RuntimeError`, as in the official SDK, so ``except RuntimeError:`` ports.

    Attributes:
        max_rounds: the cap that was reached (retries, not legs).
        last: the last InputRequiredResult, so a caller can continue by hand.
    """

    def __init__(self, max_rounds: int, last: InputRequiredResult | None = None) -> None:
        super().__init__(
            f"the server still asked for input after {max_rounds} retries; raise "
            "input_required_max_rounds or continue by hand from .last"
        )
        self.max_rounds = max_rounds
        self.last = last


class InputRequiredNotAllowedError(InputRequiredError, RuntimeError):
    """An InputRequiredResult reached a caller that did not opt in to receive one.

    Also a `RuntimeError`, as in the official SDK, so ``except RuntimeError:`` ports.

    Attributes:
        result: the InputRequiredResult that arrived.
        method: the JSON-RPC method that returned it.
    """

    def __init__(self, result: InputRequiredResult, *, method: str) -> None:
        super().__init__(
            f"the server answered {method} with InputRequiredResult; pass "
            "allow_input_required=True to receive it, or use Client, which answers it for you"
        )
        self.result = result
        self.method = method


class InputLimitExceededError(InputRequiredError):
    """A round from the server broke one of the client's limits.

    Attributes:
        limit: the name of the limit (the Client keyword that sets it).
        value: what the server sent (a count or a size).
        maximum: the limit in force.
    """

    def __init__(self, limit: str, value: int, maximum: int) -> None:
        super().__init__(f"{limit} exceeded: the server sent {value}, the limit is {maximum}")
        self.limit = limit
        self.value = value
        self.maximum = maximum


class InvalidInputResponseError(InputRequiredError):
    """A callback's answer does not fit the kind of request it answers; nothing was sent.

    Attributes:
        key: the input-request key the answer was for.
        method: the method of the input request (``elicitation/create``, ...).
    """

    def __init__(self, message: str, *, key: str | None, method: str) -> None:
        super().__init__(message)
        self.key = key
        self.method = method


class DeadlineExceededError(InputRequiredError, TimeoutError):
    """The whole exchange, all rounds and callbacks together, ran past its time budget.

    Also a builtin `TimeoutError`, so ``except TimeoutError:`` keeps catching it.

    Attributes:
        timeout: the budget in seconds.
    """

    def __init__(self, timeout: float) -> None:
        super().__init__(f"the call did not finish within its {timeout:g} s deadline")
        self.timeout = timeout


class RequestTimeoutError(MRTRError, TimeoutError):
    """One request got no response within its read timeout.

    Also a builtin `TimeoutError`, so ``except TimeoutError:`` keeps catching it.

    Attributes:
        method: the JSON-RPC method.
        request_id: the JSON-RPC id of the request.
        timeout: the timeout in seconds.
    """

    def __init__(self, method: str, request_id: int | str, timeout: float) -> None:
        super().__init__(f"no response to {method} (id {request_id}) within {timeout:g} s")
        self.method = method
        self.request_id = request_id
        self.timeout = timeout


class EraProbeTimeoutError(RequestTimeoutError):
    """``mode="auto"`` got no answer to ``server/discover`` nor to ``initialize`` in time.

    An old server (``mcp`` 1.8 and before) may ignore the probe; connect to it with
    ``mode="legacy"``.
    """

    def __init__(self, timeout: float) -> None:
        super().__init__("server/discover", 0, timeout)
        self.args = (
            f"the server answered neither server/discover nor initialize within {timeout:g} s; "
            'if it is an older MCP server, connect with mode="legacy" (or raise probe_timeout)',
        )


class ProtocolError(MRTRError):
    """The peer sent something the protocol does not allow.

    Attributes:
        method: the JSON-RPC method concerned, when known.
    """

    def __init__(self, message: str, *, method: str | None = None) -> None:
        super().__init__(message)
        self.method = method


class TransportError(MRTRError):
    """The connection to the server failed or closed."""


class MessageTooLargeError(TransportError):
    """A message from the peer was larger than the configured cap.

    Attributes:
        size: how many bytes had arrived when the cap was hit (a lower bound).
        limit: the cap in bytes.
        knob: the keyword that sets this cap.
    """

    def __init__(self, size: int, limit: int, *, knob: str = "max_message_size") -> None:
        super().__init__(
            f"a message from the server was over the {limit}-byte cap (at least {size} bytes); "
            f"raise {knob} if this server is trusted"
        )
        self.size = size
        self.limit = limit
        self.knob = knob


class RedirectError(TransportError):
    """The server redirected a request somewhere the client will not follow.

    Only redirects to the endpoint's own origin (scheme, host and port) are followed, a
    bounded number of times: a request carries its arguments and the caller's
    credentials, which must not reach another origin.

    Attributes:
        location: where the server pointed (absolute URL).
        origin: that target's origin, e.g. ``https://other.example:8443``.
    """

    def __init__(self, message: str, *, location: str, origin: str) -> None:
        super().__init__(message)
        self.location = location
        self.origin = origin


class ProcessExitedError(TransportError):
    """The stdio server process exited (or closed its output), ending the connection.

    Attributes:
        command: the command that started the server.
        returncode: its exit code (negative: killed by that signal), or ``None`` if it
            closed its standard output but had not exited yet.
    """

    def __init__(self, command: str, returncode: int | None) -> None:
        if returncode is None:
            what = "closed its standard output"
        elif returncode < 0:
            what = f"was killed by signal {-returncode}"
        else:
            what = f"exited with code {returncode}"
        super().__init__(f"the MCP server {command!r} {what}; see its stderr for why")
        self.command = command
        self.returncode = returncode


class SubscriptionLostError(MRTRError):
    """A ``subscriptions/listen`` stream ended without the server's graceful close.

    Nothing is replayed: listen again, and refetch what depends on the stream.

    Attributes:
        subscription_id: the id of the ``subscriptions/listen`` request.
    """

    def __init__(self, subscription_id: str | int, reason: str) -> None:
        super().__init__(f"the subscription {subscription_id!r} was lost: {reason}")
        self.subscription_id = subscription_id


class ClientStateError(MRTRError, RuntimeError):
    """The client, session or flow was misused: the wrong state, or arguments it forbids.

    Also a builtin `RuntimeError`: it reports a bug in the calling code, not a failure of
    the server or the network.
    """


class NotInThisEraError(ClientStateError):
    """The method does not exist in the protocol era this connection negotiated.

    Raised before anything is sent, so no round trip is spent on a certain -32601.

    Attributes:
        method: the method that was asked for.
        protocol_version: the negotiated version.
        instead: what to use in this era, when there is something.
    """

    def __init__(self, method: str, protocol_version: str | None, instead: str) -> None:
        super().__init__(
            f"{method} does not exist at protocol version {protocol_version}; {instead}"
        )
        self.method = method
        self.protocol_version = protocol_version
        self.instead = instead


class AuthError(MRTRError):
    """The server asked for authorization that mrtr could not obtain or present.

    Messages and attributes never carry a token, secret or authorization code.

    Attributes:
        server_url: the MCP server concerned, when known.
    """

    def __init__(self, message: str, *, server_url: str | None = None) -> None:
        super().__init__(message)
        self.server_url = server_url


class AuthorizationRequiredError(AuthError):
    """A login is needed: no usable token, and no way to get one without the user.

    Raised when the server answers 401 in the end, or when an interactive login is due
    and no authorizer was given (log in ahead with ``await oauth.login()``).
    """


class DiscoveryError(AuthError):
    """No usable protected-resource or authorization-server metadata was found.

    Attributes:
        tried: each URL tried, with what it answered (a status or a reason).
    """

    def __init__(
        self,
        message: str,
        *,
        server_url: str | None = None,
        tried: tuple[tuple[str, str], ...] = (),
    ) -> None:
        super().__init__(message, server_url=server_url)
        self.tried = tried


class ResourceMismatchError(DiscoveryError):
    """The protected-resource metadata names a resource that does not cover the server.

    Attributes:
        resource: the ``resource`` the metadata declared.
    """

    def __init__(self, resource: str, *, server_url: str) -> None:
        super().__init__(
            f"the protected-resource metadata is for {resource!r}, which does not cover "
            f"{server_url!r}; refusing to authorize",
            server_url=server_url,
        )
        self.resource = resource


class IssuerMismatchError(DiscoveryError):
    """An issuer did not match the one expected, compared as exact strings (rejected).

    Attributes:
        kind: ``"metadata"`` (the metadata's ``issuer``) or ``"response"`` (the ``iss`` of
            the authorization response, RFC 9207).
        expected: the issuer expected.
        actual: what arrived (``None``: missing).
    """

    def __init__(
        self, kind: str, expected: str, actual: str | None, *, server_url: str | None = None
    ) -> None:
        what = "metadata issuer" if kind == "metadata" else "authorization response iss"
        super().__init__(
            f"{what} {actual!r} does not match the expected issuer {expected!r}",
            server_url=server_url,
        )
        self.kind = kind


class RegistrationError(AuthError):
    """The client could not register (or has no registration) with the authorization server.

    Attributes:
        status: the HTTP status of the refusal, when there was one.
    """

    def __init__(
        self, message: str, *, server_url: str | None = None, status: int | None = None
    ) -> None:
        super().__init__(message, server_url=server_url)
        self.status = status


class AuthorizationDeniedError(AuthError):
    """The authorization redirect came back with an error (e.g. ``access_denied``).

    Attributes:
        error: the OAuth ``error`` code.
        description: the ``error_description``, if any.
    """

    def __init__(
        self, error: str, description: str | None = None, *, server_url: str | None = None
    ) -> None:
        text = f"authorization was refused: {error}" + (f" ({description})" if description else "")
        super().__init__(text, server_url=server_url)
        self.error = error
        self.description = description


class TokenEndpointError(AuthError):
    """The authorization server's token endpoint refused a request.

    Attributes:
        error: the OAuth ``error`` code (``invalid_grant``, ``invalid_client``, ...).
        description: the ``error_description``, if any.
        status: the HTTP status.
    """

    def __init__(
        self,
        error: str,
        description: str | None = None,
        *,
        status: int | None = None,
        server_url: str | None = None,
    ) -> None:
        text = f"the token endpoint refused: {error}" + (f" ({description})" if description else "")
        super().__init__(text, server_url=server_url)
        self.error = error
        self.description = description
        self.status = status


class InsufficientScopeError(AuthError):
    """The server still answers 403 ``insufficient_scope`` after the step-ups allowed.

    Attributes:
        required: the scopes the server's last challenge asked for.
        granted: the scopes the current token holds.
    """

    def __init__(
        self,
        required: tuple[str, ...],
        granted: tuple[str, ...] = (),
        *,
        server_url: str | None = None,
    ) -> None:
        held = f"; the token holds {' '.join(granted)}" if granted else ""
        super().__init__(
            f"the server requires scope {' '.join(required) or '(unspecified)'}{held}",
            server_url=server_url,
        )
        self.required = required
        self.granted = granted


class PausedCallError(MRTRError):
    """A paused call cannot be read, answered, claimed or resumed as asked."""


class PausedCallFormatError(PausedCallError):
    """The data is not a paused call this version of mrtr can read (fail closed).

    Attributes:
        version: the format version found, when there was one.
    """

    def __init__(self, message: str, *, version: object = None) -> None:
        super().__init__(message)
        self.version = version


class PausedCallMismatchError(PausedCallError):
    """The paused call belongs to another protocol era or another server.

    Attributes:
        field: what differs (``"protocol_version"`` or ``"server"``).
        expected: the value recorded in the paused call.
        actual: the value of the client trying to resume it.
    """

    def __init__(self, field: str, expected: object, actual: object) -> None:
        super().__init__(
            f"this paused call was made with {field} {expected!r}; the client has {actual!r}"
        )
        self.field = field
        self.expected = expected
        self.actual = actual


class PausedCallIncompleteError(PausedCallError):
    """The paused call still has unanswered input requests; nothing was sent.

    Attributes:
        missing: the unanswered keys, in the server's order.
    """

    def __init__(self, missing: tuple[str, ...]) -> None:
        super().__init__(f"answer every input request before resuming; missing {list(missing)}")
        self.missing = missing


class PausedCallNotFoundError(PausedCallError):
    """No paused call with this id in the store (never put, or purged).

    Attributes:
        id: the id asked for.
    """

    def __init__(self, id: str) -> None:
        super().__init__(f"no paused call {id!r}")
        self.id = id


class PausedCallExpiredError(PausedCallError):
    """The paused call is past its ``expires_at``: it can no longer be answered or resumed.

    Attributes:
        id: the paused call.
        expires_at: when it expired (epoch seconds).
    """

    def __init__(self, id: str, expires_at: float) -> None:
        super().__init__(f"paused call {id!r} expired at {expires_at:.3f}; start the call over")
        self.id = id
        self.expires_at = expires_at


class PausedCallClosedError(PausedCallError):
    """The paused call is over (done, failed or cancelled) or not in a state that allows this.

    Attributes:
        id: the paused call.
        status: its status in the store.
    """

    def __init__(self, id: str, status: str, action: str = "use") -> None:
        super().__init__(f"cannot {action} paused call {id!r}: it is {status}")
        self.id = id
        self.status = status


class AlreadyAnsweredError(PausedCallError):
    """Another writer answered these input requests first; nothing was written.

    Attributes:
        keys: the keys that already had answers.
    """

    def __init__(self, keys: tuple[str, ...]) -> None:
        super().__init__(f"already answered: {list(keys)} (the first answer wins)")
        self.keys = keys


class UnknownInputKeyError(PausedCallError, KeyError):
    """An answer for a key the paused round did not ask; nothing was recorded.

    Also a `KeyError`, for code that treats it as a lookup miss.

    Attributes:
        key: the key given.
        asked: the keys the round asked, in the server's order.
    """

    def __init__(self, key: str, asked: tuple[str, ...]) -> None:
        super().__init__(f"the round did not ask {key!r}; it asked {list(asked)}")
        self.key = key
        self.asked = asked

    def __str__(self) -> str:
        return str(self.args[0])


class StaleRoundError(PausedCallError):
    """The answer is for a round the call has left; nothing was written.

    Attributes:
        expected: the round the answer was meant for.
        current: the call's round now.
    """

    def __init__(self, expected: int, current: int) -> None:
        super().__init__(f"the answer is for round {expected}; the call is at round {current}")
        self.expected = expected
        self.current = current


class PausedCallBusyError(PausedCallError):
    """Another worker holds the claim on this paused call.

    Attributes:
        id: the paused call.
        status: its status (``claimed`` or ``sending``).
        lease_until: when the holder's lease lapses (epoch seconds), if known.
    """

    def __init__(self, id: str, status: str, lease_until: float | None) -> None:
        super().__init__(f"paused call {id!r} is {status} by another worker")
        self.id = id
        self.status = status
        self.lease_until = lease_until


class PausedCallStoreLockedError(PausedCallError):
    """The store's database stayed locked by another process past the busy timeout.

    Nothing was changed: the operation can be retried as it is (``retryable`` is true).

    Attributes:
        path: the database file.
        busy_timeout: the seconds waited (the store's ``busy_timeout=`` knob).
    """

    retryable = True

    def __init__(self, path: str, busy_timeout: float) -> None:
        super().__init__(
            f"the paused-call database {path!r} stayed locked for {busy_timeout:g} s; "
            "retry, or raise busy_timeout="
        )
        self.path = path
        self.busy_timeout = busy_timeout


class PausedCallInDoubtError(PausedCallError):
    """A worker recorded the retry as sent, then lost its lease: the server may have it.

    The call is never re-sent silently; re-send it explicitly (at least once) or cancel it.

    Attributes:
        id: the paused call.
        sent_at: when the retry was recorded as sent (epoch seconds), if known.
    """

    def __init__(self, id: str, sent_at: float | None) -> None:
        super().__init__(
            f"paused call {id!r} is in doubt: its retry may have reached the server; "
            "re-send it explicitly or cancel it"
        )
        self.id = id
        self.sent_at = sent_at


class LeaseLostError(PausedCallError):
    """The claim's fence is stale or its lease lapsed: another worker may own the call.

    Attributes:
        id: the paused call.
        fence: the fence presented.
    """

    def __init__(self, id: str, fence: int) -> None:
        super().__init__(f"lost the claim on paused call {id!r} (fence {fence})")
        self.id = id
        self.fence = fence


class TaskError(MRTRError):
    """A task of the tasks extension did not give a result, or its handle cannot be used.

    Attributes:
        task_id: the task, when there is one.
    """

    def __init__(self, message: str, *, task_id: str | None = None) -> None:
        super().__init__(message)
        self.task_id = task_id


class TaskCancelledError(TaskError):
    """The task ended ``cancelled`` (by this client, another one, or the server).

    Attributes:
        task_id: the task.
        status_message: the server's reason, if it gave one.
    """

    def __init__(self, task_id: str, status_message: str | None = None) -> None:
        reason = f": {status_message}" if status_message else ""
        super().__init__(f"task {task_id!r} was cancelled{reason}", task_id=task_id)
        self.status_message = status_message


class TaskNotAllowedError(TaskError):
    """The server answered with a task, and the caller did not ask to receive one.

    Attributes:
        task: the `Task` handle (``mrtr.Task``): poll or cancel it, it is running.
    """

    def __init__(self, task: Any) -> None:
        super().__init__(
            f"the server answered {task.method} with task {task.id!r}; pass allow_task=True "
            "to receive it, or use Client, which follows it for you",
            task_id=task.id,
        )
        self.task = task


class TaskInputRequiredError(TaskError):
    """The task waits for answers (``input_required``), and this caller gives none.

    Raised by ``Task.result()``: answer with ``Task.answer`` (or let `Client.call_tool`
    follow the task, answering through its callbacks).

    Attributes:
        task: the `Task` handle, with the pending questions in ``.requests``.
    """

    def __init__(self, task: Any) -> None:
        super().__init__(
            f"task {task.id!r} waits for answers to {list(task.requests)}; answer them "
            "with Task.answer(...)",
            task_id=task.id,
        )
        self.task = task


class TaskLimitExceededError(TaskError):
    """A task broke one of the client's limits (`TaskPolling`); it was cancelled.

    Attributes:
        limit: the name of the limit (the `TaskPolling` field).
        value: what the server caused.
        maximum: the limit in force.
    """

    def __init__(self, limit: str, value: int, maximum: int, *, task_id: str) -> None:
        super().__init__(
            f"{limit} exceeded for task {task_id!r}: {value}, the limit is {maximum}",
            task_id=task_id,
        )
        self.limit = limit
        self.value = value
        self.maximum = maximum


class TaskFormatError(TaskError):
    """The data is not a task handle this version of mrtr can read (fail closed)."""


class TaskMismatchError(TaskError):
    """The task handle belongs to another server (or era) than the one it was used with.

    A task id means something only to the server that made it: asking another one
    would at best fail and at worst read someone else's task, so nothing is sent.

    Attributes:
        field: what differs (``"server"`` or ``"protocol_version"``).
        expected: the value recorded in the handle.
        actual: the value of the session it was used with.
    """

    def __init__(self, field: str, expected: object, actual: object, *, task_id: str) -> None:
        super().__init__(
            f"task {task_id!r} was made with {field} {expected!r}; this session has {actual!r}",
            task_id=task_id,
        )
        self.field = field
        self.expected = expected
        self.actual = actual


class InvalidRequestState(MRTRError):
    """Server side: a sealed ``requestState`` token failed verification.

    Raised by request-state codecs (``mrtr.server``) for a token they did not mint
    unmodified. The message is a reason for the server log only; the client always gets
    the same frozen -32602 answer.
    """
