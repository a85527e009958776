"""Elicitation: the form or URL a server asks the user to fill, and the user's answer.

Its own module, apart from sampling and roots, because a client's elicitation callback
is written against `ElicitResult` and imported with the client: importing it should build
only these classes (and their base), not the content blocks and tools that sampling needs.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeAlias

from pydantic import Discriminator, Field, Tag

from mrtr._lazy import publish
from mrtr.types._base import Meta, RequestParams, WireModel

__all__ = [
    "ElicitContentValue",
    "ElicitRequest",
    "ElicitRequestFormParams",
    "ElicitRequestParams",
    "ElicitRequestURLParams",
    "ElicitResult",
]


# --- elicitation/create ---------------------------------------------------------------


class ElicitRequestFormParams(RequestParams):
    """Ask the user to fill a form; `requested_schema` is a flat JSON Schema, kept verbatim.

    `mode` is `None` when the server left it out, which means form.
    """

    mode: Literal["form"] | None = None
    message: str
    requested_schema: dict[str, Any]


class ElicitRequestURLParams(RequestParams):
    """Send the user to a URL out of band. Never fetched or opened by the library."""

    mode: Literal["url"] = "url"
    message: str
    url: str
    elicitation_id: str | None = None  # legacy (2025-11-25) only


def _elicit_mode(value: Any) -> str | None:
    if isinstance(value, dict):
        mode = value.get("mode", "form")
        return "form" if mode is None else mode if isinstance(mode, str) else None
    if isinstance(value, ElicitRequestURLParams):
        return "url"
    return "form" if isinstance(value, ElicitRequestFormParams) else None


ElicitRequestParams: TypeAlias = Annotated[
    Annotated[ElicitRequestFormParams, Tag("form")] | Annotated[ElicitRequestURLParams, Tag("url")],
    Discriminator(_elicit_mode),
]
"""Form or URL elicitation params; a missing `mode` is form."""


class ElicitRequest(WireModel):
    """`elicitation/create`: ask the user something."""

    method: Literal["elicitation/create"] = "elicitation/create"
    params: ElicitRequestParams


ElicitContentValue: TypeAlias = str | int | float | bool | list[str]


class ElicitResult(WireModel):
    """The user's answer to an elicitation. `decline` and `cancel` are ordinary answers."""

    meta: Meta | None = Field(default=None, alias="_meta")
    action: Literal["accept", "decline", "cancel"]
    content: dict[str, ElicitContentValue] | None = None


publish("mrtr.types", ElicitRequest, ElicitRequestFormParams, ElicitRequestURLParams, ElicitResult)
