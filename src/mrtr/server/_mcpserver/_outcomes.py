"""What a resolver's consumer gets when it annotates ``ElicitationResult[T]``: the outcome."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar, Union

from typing_extensions import TypeAliasType

from mrtr._lazy import publish

__all__ = [
    "AcceptedElicitation",
    "CancelledElicitation",
    "DeclinedElicitation",
    "ElicitationResult",
]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class AcceptedElicitation(Generic[T]):
    """The user answered; `data` is the validated answer (the model, or the scalar)."""

    data: T
    action: Literal["accept"] = "accept"


@dataclass(frozen=True, slots=True)
class DeclinedElicitation:
    """The user said no."""

    action: Literal["decline"] = "decline"


@dataclass(frozen=True, slots=True)
class CancelledElicitation:
    """The user dismissed the question without choosing."""

    action: Literal["cancel"] = "cancel"


ElicitationResult = TypeAliasType(
    "ElicitationResult",
    Union[AcceptedElicitation[T], DeclinedElicitation, CancelledElicitation],  # noqa: UP007
    type_params=(T,),
)
"""Annotate a resolved parameter with it to branch on accept, decline and cancel."""


def is_outcome_annotation(annotation: Any) -> bool:
    """Whether a parameter annotated so wants the outcome, not the unwrapped answer."""
    origin = getattr(annotation, "__origin__", None)
    if annotation is ElicitationResult or origin is ElicitationResult:
        return True
    candidates = getattr(annotation, "__args__", ()) if origin is Union else (annotation,)
    for arm in candidates:
        base = getattr(arm, "__origin__", arm)
        if base in (AcceptedElicitation, DeclinedElicitation, CancelledElicitation):
            return True
    return False


publish("mrtr.server", AcceptedElicitation, CancelledElicitation, DeclinedElicitation)
