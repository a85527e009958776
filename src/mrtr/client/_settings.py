"""The checks of a `Client`'s settings, made once when the client is made.

The settings are read at different times (some on open, some on every call), so they
are checked once, up front, and may not change after the client opens.
"""

from __future__ import annotations

from mrtr.types._constants import MODERN_PROTOCOL_VERSIONS

__all__ = ["check_positive", "check_settings"]


def check_positive(name: str, value: float | None) -> None:
    """Refuse a limit that is set but not positive (``None`` means no limit).

    Raises:
        ValueError: `value` is set and not positive.
    """
    if value is not None and not value > 0:
        raise ValueError(f"{name} must be positive, or None for no limit")


def check_settings(
    *,
    mode: str,
    input_required_max_rounds: object,
    read_timeout_seconds: float | None,
    call_timeout: float | None,
    max_message_size: int,
    probe_timeout: float,
    pause_ttl: float,
    max_leg_resends: object = 0,
) -> None:
    """Refuse an unknown mode, or a limit that is not positive.

    Raises:
        ValueError: the first setting found wrong.
    """
    if mode not in ("auto", "legacy") and mode not in MODERN_PROTOCOL_VERSIONS:
        raise ValueError(
            f"mode must be 'auto', 'legacy' or one of {', '.join(MODERN_PROTOCOL_VERSIONS)}; "
            f"got {mode!r}"
        )
    rounds = input_required_max_rounds
    if not isinstance(rounds, int) or isinstance(rounds, bool) or rounds < 0:
        raise ValueError("input_required_max_rounds must be a non-negative int")
    resends = max_leg_resends
    if not isinstance(resends, int) or isinstance(resends, bool) or resends < 0:
        raise ValueError("max_leg_resends must be a non-negative int")
    check_positive("read_timeout_seconds", read_timeout_seconds)
    check_positive("call_timeout", call_timeout)
    check_positive("max_message_size", max_message_size)
    check_positive("probe_timeout", probe_timeout)
    check_positive("pause_ttl", pause_ttl)
