"""`TaskRecord`: one task as a store keeps it."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["TaskRecord"]


@dataclass(frozen=True, slots=True)
class TaskRecord:
    """One task as stored: the fields a store may read, and an opaque payload.

    A store never looks inside ``payload``: the runner seals it (the pending questions,
    the result or the error) with the server's ``requestState`` keys, so what is at rest
    is encrypted unless the server is ``UNSEALED``.

    Attributes:
        task_id: the unguessable identifier (the key).
        owner: a digest of the principal the task is bound to (``""``: none).
        status: ``working``, ``input_required``, ``completed``, ``failed`` or ``cancelled``.
        created_at: seconds since the epoch.
        updated_at: seconds since the epoch, at the last change.
        expires_at: seconds since the epoch after which the task is gone (``None``: never).
        poll_interval_ms: the poll interval suggested to the client.
        status_message: a human-readable note on the status.
        payload: the sealed rest (questions, result, error), as the runner wrote it.
    """

    task_id: str
    owner: str
    status: str
    created_at: float
    updated_at: float
    expires_at: float | None
    poll_interval_ms: int | None
    status_message: str | None
    payload: str

    @property
    def live(self) -> bool:
        """Whether the task is unfinished (working or waiting on the client)."""
        return self.status in ("working", "input_required")
