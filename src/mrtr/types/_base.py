"""The base of every wire model: camelCase on the wire, snake_case in Python.

Models are frozen (build a new one with `model_copy(update=...)`), keep unknown fields
(forward compatibility) and omit `None` fields when sent.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class WireModel(BaseModel):
    """A JSON object on the wire."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="allow",
        frozen=True,
        defer_build=True,  # build validators on first use: keeps `import mrtr` cheap
    )

    def to_wire(self) -> dict[str, Any]:
        """The JSON object to send: wire names, `None` fields left out."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")
