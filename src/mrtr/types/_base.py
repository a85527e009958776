"""The base of every wire model: camelCase on the wire, snake_case in Python.

Models are frozen (build a new one with `model_copy(update=...)`), keep unknown fields
(forward compatibility) and omit `None` fields when sent. Validators are built on first
use (`defer_build`), so importing the package stays cheap.
"""

from __future__ import annotations

from typing import Any, TypeAlias

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from mrtr._lazy import publish

__all__ = [
    "Cursor",
    "EmptyResult",
    "Meta",
    "NotificationParams",
    "PaginatedRequestParams",
    "ProgressToken",
    "RequestId",
    "RequestParams",
    "Result",
    "WireModel",
]

RequestId: TypeAlias = str | int
"""A JSON-RPC request id: a string or an integer, never null."""

ProgressToken: TypeAlias = str | int
"""The token that ties progress notifications to one request."""

Cursor: TypeAlias = str
"""An opaque pagination cursor."""

Meta: TypeAlias = dict[str, Any]
"""A `_meta` object: reserved keys under `io.modelcontextprotocol/`, anything else allowed."""


class WireModel(BaseModel):
    """A JSON object on the wire."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="allow",
        frozen=True,
        defer_build=True,  # build validators on first use: keeps `import mrtr` cheap
        protected_namespaces=(),  # `model_preferences` is a wire name (pydantic < 2.10 warns)
    )

    def to_wire(self) -> dict[str, Any]:
        """The JSON object to send: wire names, `None` fields left out."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")


class RequestParams(WireModel):
    """The params of a request; `_meta` carries the modern envelope (version, capabilities)."""

    meta: Meta | None = Field(default=None, alias="_meta")


class PaginatedRequestParams(RequestParams):
    """The params of a list request: an optional cursor from the previous page."""

    cursor: Cursor | None = None


class NotificationParams(WireModel):
    """The params of a notification."""

    meta: Meta | None = Field(default=None, alias="_meta")


# the fields the spec gives a default: name, wire name, default
_SPEC_DEFAULTS: tuple[tuple[str, str, object], ...] = (
    ("result_type", "resultType", "complete"),
    ("is_error", "isError", False),
    ("ttl_ms", "ttlMs", 0),
    ("cache_scope", "cacheScope", "private"),
)
_DEFAULTED: dict[type, tuple[tuple[str, str], ...]] = {}


def _defaulted(cls: type[BaseModel]) -> tuple[tuple[str, str], ...]:
    """The (name, wire name) of `cls`'s fields that default to the spec's value."""
    found = _DEFAULTED.get(cls)
    if found is None:
        fields = cls.model_fields
        found = tuple(
            (name, alias)
            for name, alias, value in _SPEC_DEFAULTS
            if name in fields and fields[name].default == value
        )
        _DEFAULTED[cls] = found
    return found


class Result(WireModel):
    """A server result.

    The fields the spec gives a default have it here as in the official SDK
    (``result_type`` ``"complete"``, ``is_error`` ``False``, ``ttl_ms`` ``0``,
    ``cache_scope`` ``"private"``), so a received result equals a hand-built one. A
    default that was not set is left out of `to_wire` (the server half adds what an
    era requires); whether the peer sent one is in ``model_fields_set``.
    """

    meta: Meta | None = Field(default=None, alias="_meta")
    result_type: str | None = "complete"

    def to_wire(self) -> dict[str, Any]:
        """The JSON object to send: wire names, `None` and unset spec defaults left out."""
        wire = self.model_dump(by_alias=True, exclude_none=True, mode="json")
        fields_set = self.model_fields_set
        for name, alias in _defaulted(type(self)):
            if name not in fields_set:  # popped after: model_dump(exclude=) is 2x slower
                wire.pop(alias, None)
        return wire


class EmptyResult(Result):
    """A result that carries nothing (`ping`, `logging/setLevel`, ...).

    Its ``result_type`` stays ``None``, as in the official SDK: an empty result is ``{}``.
    """

    result_type: str | None = None


publish(
    "mrtr.types",
    EmptyResult,
    NotificationParams,
    PaginatedRequestParams,
    RequestParams,
    Result,
    WireModel,
)
