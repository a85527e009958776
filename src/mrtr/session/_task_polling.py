"""`TaskPolling`: how often a client asks a task how it is, and when it gives up.

The server suggests an interval (``pollIntervalMs``) and may change it on every answer;
a client honours it, but within bounds of its own: a hostile or buggy server that says
0 ms does not get a busy loop, and one that says a day does not stall a call that has a
deadline of minutes. Without a suggestion the interval ramps up from short (a quick task
is seen quickly) to a steady ceiling.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT_TASK_POLLING", "TaskPolling"]


def _check_interval(name: str, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"TaskPolling.{name} must be a positive number of seconds, not {value!r}")


def _check_count(name: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"TaskPolling.{name} must be a positive int, not {value!r}")


@dataclass(frozen=True, slots=True)
class TaskPolling:
    """Bounds on polling a task, and limits against a server that never lets go.

    Attributes:
        min_interval: the shortest wait between two polls, in seconds, whatever the
            server suggests.
        max_interval: the longest wait between two polls, in seconds, whatever the
            server suggests.
        initial_interval: the first wait when the server suggests none; it doubles on
            each poll up to ``default_interval``.
        default_interval: the steady wait when the server suggests none.
        max_polls: ``tasks/get`` requests allowed for one task before the client gives
            up (`TaskLimitExceededError`, and the task is cancelled).
        max_input_requests: questions one poll may bring (so 5,000 questions are never
            5,000 concurrent callbacks).
        cancel_timeout: how long the ``tasks/cancel`` sent when a call is abandoned
            (cancelled, past its deadline, failed) may take, in seconds.
        max_wait: how long `Client.call_tool` follows one task, in seconds, before it
            gives up (`TaskLimitExceededError`, the task cancelled), whatever the call's
            own ``timeout``; ``None``: no bound. A task past its ``ttlMs`` (plus
            ``max_interval``) is given up too: the server may have discarded it.

    Raises:
        ValueError: a field that is not positive, or ``min_interval`` over
            ``max_interval``.
    """

    min_interval: float = 0.05
    max_interval: float = 30.0
    initial_interval: float = 0.1
    default_interval: float = 1.0
    max_polls: int = 100_000
    max_input_requests: int = 64
    cancel_timeout: float = 5.0
    max_wait: float | None = 24 * 3600.0

    def __post_init__(self) -> None:
        for name in (
            "min_interval",
            "max_interval",
            "initial_interval",
            "default_interval",
            "cancel_timeout",
        ):
            _check_interval(name, getattr(self, name))
        if self.max_wait is not None:
            _check_interval("max_wait", self.max_wait)
        _check_count("max_polls", self.max_polls)
        _check_count("max_input_requests", self.max_input_requests)
        if self.min_interval > self.max_interval:
            raise ValueError("TaskPolling.min_interval must not be over max_interval")

    def delay(self, suggested_ms: int | float | None, previous: float | None = None) -> float:
        """The wait before the next poll, in seconds.

        Args:
            suggested_ms: the server's latest ``pollIntervalMs`` (``None``: it gave none).
            previous: the wait before the last poll, for the ramp (``None``: first poll).
        """
        if suggested_ms is None or isinstance(suggested_ms, bool):
            wait = self.initial_interval if previous is None else previous * 2
            wait = min(wait, self.default_interval)
        else:
            wait = suggested_ms / 1000.0 if suggested_ms == suggested_ms else self.max_interval
        return min(max(wait, self.min_interval), self.max_interval)


DEFAULT_TASK_POLLING = TaskPolling()
"""The polling of a client given no `TaskPolling`."""
