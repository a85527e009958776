"""What `Client` does to pause a call and to resume one: checks, value building, store steps.

The loop itself stays in `_calls.drive` and `run_input_required_driver`; this module
holds the parts that are about pausing only, so the loop keeps a small hook:

* `can_answer`: whether a live callback exists for an input request (else it pauses);
* `paused_from_round`: the `PausedCall` for a round the driver stopped at;
* `check_resumable`: the checks made before a resume sends anything;
* `resume_from`: claim, mark sent, retry and finish against a `PausedCallStore`.
"""

from __future__ import annotations

import logging
import socket
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from mrtr.errors import (
    ClientStateError,
    LeaseLostError,
    PausedCallExpiredError,
    PausedCallFormatError,
    PausedCallIncompleteError,
    PausedCallMismatchError,
    RequestStateRejectedError,
    TransportError,
)
from mrtr.flow._flow import FlowState, InputRequiredFlow
from mrtr.flow._paused import PAUSED_CALL_VERSION, PausedCall, RoundPaused, new_paused_call_id

if TYPE_CHECKING:
    from mrtr.paused._store import PausedCallStore
    from mrtr.session import ClientSession
    from mrtr.session._callbacks import InputCallbacks
    from mrtr.types import Implementation, InputRequest

__all__ = [
    "Pausing",
    "Resumer",
    "can_answer",
    "check_resumable",
    "paused_from_round",
    "resume_from",
    "resumed_state",
]

_logger = logging.getLogger("mrtr.paused")


class Resumer(Protocol):
    """What the resume steps need of a `Client` (the client sits above this module)."""

    @property
    def protocol_version(self) -> str:
        """The negotiated protocol version."""
        ...

    @property
    def server_info(self) -> Implementation | None:
        """The server's name and version."""
        ...

    async def resume(self, paused: PausedCall) -> Any:
        """Send the retry of ``paused`` and go on with the loop."""
        ...


@dataclass(frozen=True, slots=True)
class Pausing:
    """How a pausable call builds its `PausedCall`.

    Attributes:
        ttl: seconds a paused round may wait for answers.
        previous: the value being resumed (its id, start time and meta carry on).
    """

    ttl: float
    previous: PausedCall | None = None


def can_answer(callbacks: InputCallbacks, request: InputRequest) -> bool:
    """True when a live callback of the request's kind exists (otherwise the key pauses)."""
    from mrtr.types import CreateMessageRequest, ElicitRequest, ElicitRequestURLParams

    if isinstance(request, ElicitRequest):
        if callbacks.elicitation is None:
            return False
        return callbacks.url_mode or not isinstance(request.params, ElicitRequestURLParams)
    if isinstance(request, CreateMessageRequest):
        return callbacks.sampling is not None
    return callbacks.list_roots is not None


def check_era(session: ClientSession) -> None:
    """Refuse a pause on a legacy connection, up front.

    Raises:
        ClientStateError: the session is not in the 2026-07-28 era.
    """
    if session.era != "modern":
        raise ClientStateError(
            f"only a 2026-07-28 call can pause; this connection speaks {session.protocol_version} "
            "(the legacy back-channel holds an open request that cannot be stored)"
        )


def paused_from_round(
    signal: RoundPaused,
    pausing: Pausing,
    *,
    session: ClientSession,
    method: str,
    name: str,
    arguments: Any,
    max_rounds: int,
) -> PausedCall:
    """The value for a round the driver stopped at."""
    now = time.time()
    previous = pausing.previous
    info = session.server_info
    return PausedCall(
        id=new_paused_call_id() if previous is None else previous.id,
        method=method,
        name=name,
        arguments=None if arguments is None else dict(arguments),
        protocol_version=session.protocol_version or "",
        server_name=None if info is None else info.name,
        server_version=None if info is None else info.version,
        flow=signal.state,
        answers=dict(signal.answers),
        max_rounds=max_rounds,
        created_at=now if previous is None else previous.created_at,
        paused_at=now,
        expires_at=now + pausing.ttl,
        meta=None if previous is None else previous.meta,
        trace=None if previous is None else previous.trace,
    )


def check_resumable(client: Resumer, paused: PausedCall, *, now: float | None = None) -> None:
    """Everything a resume checks before it sends: format, era, server, answers, expiry.

    Raises:
        PausedCallFormatError: an unknown format version.
        PausedCallMismatchError: another era (``protocol_version``) or server (``server``).
        PausedCallIncompleteError: some request has no answer (``.missing``).
        PausedCallExpiredError: past ``expires_at``.
        ClientStateError: the client is not open.
    """
    if paused.version != PAUSED_CALL_VERSION:
        raise PausedCallFormatError(
            f"unknown paused-call format version {paused.version!r}", version=paused.version
        )
    version = client.protocol_version
    if paused.protocol_version != version:
        raise PausedCallMismatchError("protocol_version", paused.protocol_version, version)
    info = client.server_info
    server = None if info is None else info.name
    if paused.server_name is not None and paused.server_name != server:
        raise PausedCallMismatchError("server", paused.server_name, server)
    if not paused.is_answered:
        raise PausedCallIncompleteError(paused.missing)
    if paused.is_expired(now):
        raise PausedCallExpiredError(paused.id, paused.expires_at)


def resumed_state(paused: PausedCall) -> FlowState:
    """The flow's state once the paused round's retry is produced (its round carries on)."""
    flow = InputRequiredFlow(max_rounds=paused.max_rounds, state=paused.flow)
    flow.receive_responses(paused.answers)
    return flow.state


def _owner() -> str:
    return f"{socket.gethostname()}:{new_paused_call_id()[:8]}"


async def _renew_forever(store: PausedCallStore, id: str, fence: int, lease: float) -> None:
    while True:
        await anyio.sleep(lease / 3)
        try:
            await store.renew(id, fence, lease=lease)
        except LeaseLostError:
            _logger.warning("paused call %s: the lease was lost during the retry", id)
            return
        except Exception:
            _logger.warning("paused call %s: renewing the lease failed", id, exc_info=True)


async def resume_from(client: Resumer, store: PausedCallStore, id: str, *, lease: float) -> Any:
    """Claim, mark sent, retry, finish: at most one retry per answered round, ever.

    Raises:
        PausedCallNotFoundError, PausedCallExpiredError, PausedCallBusyError,
        PausedCallInDoubtError, PausedCallClosedError, LeaseLostError: from the store.
        PausedCallMismatchError, PausedCallIncompleteError: the checks of `resume`.
        RequestStateRejectedError: the server refused the state (recorded as failed).
        Exception: whatever the resumed call raised (recorded as failed once sent).
    """
    from mrtr.paused._store import Completed, Failed, Repaused

    if not lease > 0:
        raise ValueError("lease must be positive")
    claim = await store.claim(id, owner=_owner(), lease=lease)
    paused, fence = claim.call, claim.fence
    try:
        check_resumable(client, paused)
    except BaseException:
        with anyio.CancelScope(shield=True):
            await store.release(id, fence)
        raise
    await store.mark_sent(id, fence, lease=lease)
    try:
        outcome = await _resume_renewing(client, store, paused, fence, lease)
    except RequestStateRejectedError as exc:
        with anyio.CancelScope(shield=True):
            await store.finish(id, fence, Failed("state_rejected", str(exc)))
        raise
    except TransportError as exc:
        # Bytes may have left: the record stays "sending", its lease lapses, and the
        # next claim reports it in doubt rather than sending it again.
        _logger.warning("paused call %s: transport failed during the retry: %r", id, exc)
        raise
    except Exception as exc:
        with anyio.CancelScope(shield=True):
            await store.finish(id, fence, Failed(type(exc).__name__, str(exc)))
        raise
    with anyio.CancelScope(shield=True):
        if isinstance(outcome, PausedCall):
            await store.finish(id, fence, Repaused(outcome))
        else:
            await store.finish(id, fence, Completed(outcome))
    return outcome


async def _resume_renewing(
    client: Resumer, store: PausedCallStore, paused: PausedCall, fence: int, lease: float
) -> Any:
    """`client.resume`, renewing the lease meanwhile; its exception comes out as itself."""
    outcome: Any = None
    failure: list[BaseException] = []

    async def run() -> None:
        nonlocal outcome
        try:
            outcome = await client.resume(paused)
        except Exception as exc:
            failure.append(exc)
        finally:
            tg.cancel_scope.cancel()

    async with anyio.create_task_group() as tg:
        tg.start_soon(_renew_forever, store, paused.id, fence, lease)
        tg.start_soon(run)
    if failure:
        raise failure[0]
    return outcome
