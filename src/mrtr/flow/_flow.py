"""The sans-IO core of the multi-round-trip loop: results in, plain-data actions out.

`InputRequiredFlow` is shaped like httpx's ``Auth.auth_flow``, but as an explicit state
machine rather than a generator: a paused generator cannot be written to a store, while
`FlowState` is a frozen value that can (the persistence layer needs exactly that). No
time, no concurrency and no I/O hide in here, so the round cap, the backoff schedule,
the limits and the state echo are tested with plain calls.

One exchange goes::

    receive_result(first)      -> DispatchInputs | Wait | Finish
    receive_responses(answers) -> Retry            (after DispatchInputs)
    wait_elapsed()             -> Retry            (after Wait)
    receive_result(retried)    -> DispatchInputs | Wait | Finish
    ...
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mrtr import types as _types  # lazy names; cheaper per call than a `from` import
from mrtr._lazy import publish
from mrtr._wire.framing import utf8_size
from mrtr.errors import ClientStateError, InputLimitExceededError, InputRequiredRoundsExceededError
from mrtr.flow._defaults import DEFAULT_INPUT_REQUIRED_MAX_ROUNDS

if TYPE_CHECKING:
    from mrtr.types import InputRequest, InputRequiredResult, InputResponse

__all__ = [
    "DEFAULT_INPUT_REQUIRED_MAX_ROUNDS",
    "STATE_ONLY_BACKOFF_CAP_SECONDS",
    "STATE_ONLY_BACKOFF_INITIAL_SECONDS",
    "DispatchInputs",
    "Finish",
    "FlowAction",
    "FlowState",
    "InputLimits",
    "InputRequiredFlow",
    "Retry",
    "Wait",
    "utf8_size",
]


STATE_ONLY_BACKOFF_INITIAL_SECONDS = 0.05
"""The wait before retrying a round that carried only ``request_state``."""

STATE_ONLY_BACKOFF_CAP_SECONDS = 0.25
"""The state-only wait doubles up to this; a round with input requests resets it."""


def _check_count(name: str, value: object, *, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")


@dataclass(frozen=True, slots=True)
class InputLimits:
    """Bounds on what one server may ask of the client, against a hostile or buggy peer.

    Each violation raises `InputLimitExceededError` naming the field, before anything is
    dispatched or echoed.

    Attributes:
        max_input_requests: input requests allowed in one round (so a round of 5,000
            never becomes 5,000 concurrent callbacks).
        max_request_state_size: ``requestState`` size in UTF-8 bytes that the client
            agrees to echo.
        max_state_only_rounds: consecutive rounds that carry only ``requestState``.

    Raises:
        ValueError: a field is not a non-negative int.
    """

    max_input_requests: int = 64
    max_request_state_size: int = 256 * 1024
    max_state_only_rounds: int = 10

    def __post_init__(self) -> None:
        _check_count("max_input_requests", self.max_input_requests, minimum=0)
        _check_count("max_request_state_size", self.max_request_state_size, minimum=0)
        _check_count("max_state_only_rounds", self.max_state_only_rounds, minimum=0)


_DEFAULT_LIMITS = InputLimits()


@dataclass(frozen=True, slots=True)
class FlowState:
    """Everything the flow knows: a paused call is this value.

    Attributes:
        round: how many InputRequiredResults the flow has accepted (the current round).
        delay: the wait, in seconds, before the next state-only retry.
        state_only_rounds: how many state-only rounds came in a row, up to this one.
        pending: the InputRequiredResult of the current round, until its retry is
            produced; ``None`` when the flow waits for a result.
        finished: a terminal result has been seen; the flow accepts nothing more.
    """

    round: int = 0
    delay: float = STATE_ONLY_BACKOFF_INITIAL_SECONDS
    state_only_rounds: int = 0
    pending: InputRequiredResult | None = None
    finished: bool = False

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready object, for writing a paused call to a store."""
        return {
            "round": self.round,
            "delay": self.delay,
            "stateOnlyRounds": self.state_only_rounds,
            "pending": None if self.pending is None else self.pending.to_wire(),
            "finished": self.finished,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> FlowState:
        """Rebuild a state written by `to_json`.

        Raises:
            KeyError: a member is missing.
            mrtr.errors.ProtocolError: ``pending`` is not a valid InputRequiredResult.
        """
        pending = data["pending"]
        return cls(
            round=data["round"],
            delay=data["delay"],
            state_only_rounds=data["stateOnlyRounds"],
            pending=None if pending is None else _parse_pending(pending),
            finished=data["finished"],
        )


_INITIAL_STATE = FlowState()


def _parse_pending(raw: Mapping[str, Any]) -> InputRequiredResult:
    from mrtr.types import InputRequiredResult, parse_result

    result = parse_result("tools/call", dict(raw))
    if not isinstance(result, InputRequiredResult):
        from mrtr.errors import ProtocolError

        raise ProtocolError("the stored pending round is not an InputRequiredResult")
    return result


@dataclass(frozen=True, slots=True)
class DispatchInputs:
    """Fulfil every input request of this round, then call `InputRequiredFlow.receive_responses`.

    Attributes:
        round: the round number (1 for the first InputRequiredResult).
        requests: input-request key -> request, exactly as the server sent them.
    """

    round: int
    requests: Mapping[str, InputRequest]


@dataclass(frozen=True, slots=True)
class Wait:
    """Sleep this long (a state-only round), then call `InputRequiredFlow.wait_elapsed`.

    Attributes:
        round: the round number.
        seconds: how long to wait before retrying.
    """

    round: int
    seconds: float


@dataclass(frozen=True, slots=True)
class Retry:
    """Re-issue the original request with these responses and this state.

    Attributes:
        round: the round number this retry answers (the n-th retry answers round n).
        input_responses: the answers keyed as asked, or ``None`` for a state-only round.
        request_state: the round's ``requestState`` exactly as received, or ``None``.
    """

    round: int
    input_responses: Mapping[str, InputResponse] | None
    request_state: str | None


@dataclass(frozen=True, slots=True)
class Finish:
    """The exchange is over.

    Attributes:
        result: the terminal result.
    """

    result: Any


FlowAction = DispatchInputs | Wait | Retry | Finish
"""What `InputRequiredFlow` asks its shell to do next: one of four plain values."""


def _check_state_size(state: str, maximum: int) -> None:
    if state.isascii():  # O(1): the usual case, an opaque ASCII token
        size = len(state)
    elif len(state) * 4 <= maximum:
        return  # four bytes per character at most: under the limit whatever it holds
    else:
        size = utf8_size(state)
    if size > maximum:
        raise InputLimitExceededError("max_request_state_size", size, maximum)


class InputRequiredFlow:
    """The multi-round-trip loop as a state machine over plain data.

    Feed it each result (the first one, then whatever each retry returns) and carry out
    the action it returns. Errors leave the state as it was, so a caller who catches one
    can still read `state` (and, for the round cap, continue by hand from ``.last``).

    Args:
        max_rounds: retries allowed; 10 means at most 11 requests in all.
        limits: bounds against a hostile server; `InputLimits()` when ``None``.
        state: a state saved from an earlier flow, to resume a paused call.

    Raises:
        ValueError: ``max_rounds`` is not a non-negative int.
    """

    # The state lives in plain slots and `state` snapshots it into a `FlowState`: the hot
    # path then assigns attributes instead of building a frozen value at every step.
    __slots__ = (
        "_delay",
        "_finished",
        "_limits",
        "_max_rounds",
        "_pending",
        "_round",
        "_state_only_rounds",
    )

    def __init__(
        self,
        *,
        max_rounds: int = DEFAULT_INPUT_REQUIRED_MAX_ROUNDS,
        limits: InputLimits | None = None,
        state: FlowState | None = None,
    ) -> None:
        _check_count("max_rounds", max_rounds, minimum=0)
        self._max_rounds = max_rounds
        self._limits = _DEFAULT_LIMITS if limits is None else limits
        st = _INITIAL_STATE if state is None else state
        self._round = st.round
        self._delay = st.delay
        self._state_only_rounds = st.state_only_rounds
        self._pending = st.pending
        self._finished = st.finished

    @property
    def max_rounds(self) -> int:
        """The round cap (retries, not legs)."""
        return self._max_rounds

    @property
    def limits(self) -> InputLimits:
        """The limits in force."""
        return self._limits

    @property
    def state(self) -> FlowState:
        """The whole state of the flow, as a frozen value (a snapshot)."""
        return FlowState(
            self._round, self._delay, self._state_only_rounds, self._pending, self._finished
        )

    def receive_result(self, result: object) -> DispatchInputs | Wait | Finish:
        """Take the first result or the answer to a retry; say what to do next.

        Anything that is not an `InputRequiredResult` is terminal.

        Raises:
            InputRequiredRoundsExceededError: the server asked again after ``max_rounds``
                retries; ``.last`` is this result.
            InputLimitExceededError: the round breaks one of the `InputLimits`.
            ClientStateError: the flow is finished or still owes a retry for a round.
        """
        if self._finished or self._pending is not None:
            raise ClientStateError(
                "this flow is finished" if self._finished else "finish the pending round first"
            )
        if not isinstance(result, _types.InputRequiredResult):
            self._finished = True
            return Finish(result)
        number = self._round + 1
        if number > self._max_rounds:
            raise InputRequiredRoundsExceededError(self._max_rounds, result)
        limits = self._limits
        if result.request_state is not None:
            _check_state_size(result.request_state, limits.max_request_state_size)
        requests = result.input_requests
        if not requests:
            return self._state_only(number, result)
        if len(requests) > limits.max_input_requests:
            raise InputLimitExceededError(
                "max_input_requests", len(requests), limits.max_input_requests
            )
        self._round = number
        self._delay = STATE_ONLY_BACKOFF_INITIAL_SECONDS
        self._state_only_rounds = 0
        self._pending = result
        return DispatchInputs(number, requests)

    def _state_only(self, number: int, result: InputRequiredResult) -> Wait:
        count = self._state_only_rounds + 1
        maximum = self._limits.max_state_only_rounds
        if count > maximum:
            raise InputLimitExceededError("max_state_only_rounds", count, maximum)
        delay = self._delay
        self._round = number
        self._delay = min(delay * 2, STATE_ONLY_BACKOFF_CAP_SECONDS)
        self._state_only_rounds = count
        self._pending = result
        return Wait(number, delay)

    def receive_responses(self, responses: Mapping[str, InputResponse]) -> Retry:
        """Take the answers to a `DispatchInputs`; get the retry to send.

        The flow does not validate the answers (the shell checks each one once, as it
        arrives); it only checks they are keyed exactly as asked.

        Raises:
            ClientStateError: the flow is not waiting for answers, or the keys differ
                from the requested ones (both are misuse of the flow, not bad input).
        """
        pending = self._pending
        if pending is None or not pending.input_requests:
            raise ClientStateError("the flow is not waiting for input responses")
        asked = pending.input_requests.keys()
        if responses.keys() != asked:
            missing = sorted(asked - responses.keys())
            extra = sorted(responses.keys() - asked)
            raise ClientStateError(
                f"input responses must answer exactly the keys asked: missing {missing}, "
                f"extra {extra}"
            )
        self._pending = None
        return Retry(self._round, responses, pending.request_state)

    def wait_elapsed(self) -> Retry:
        """Say the `Wait` is over; get the retry to send.

        Raises:
            ClientStateError: the flow is not waiting out a state-only round.
        """
        pending = self._pending
        if pending is None or pending.input_requests:
            raise ClientStateError("the flow is not waiting out a state-only round")
        self._pending = None
        return Retry(self._round, None, pending.request_state)


publish("mrtr", DispatchInputs, Finish, FlowState, InputLimits, InputRequiredFlow, Retry, Wait)
