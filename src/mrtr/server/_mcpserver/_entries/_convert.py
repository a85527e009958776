"""Return values into wire content: a tool's content blocks and structured output."""

from __future__ import annotations

import dataclasses
import types
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, TypeAdapter, create_model
from typing_extensions import is_typeddict

__all__ = ["OutputSpec", "output_spec", "to_content", "to_text"]


_CONTENT_TYPES: tuple[type, ...] = ()


def _content_types() -> tuple[type, ...]:
    global _CONTENT_TYPES
    if not _CONTENT_TYPES:  # looked up once: the content models load with mrtr.types
        from mrtr.types import (
            AudioContent,
            EmbeddedResource,
            ImageContent,
            ResourceLink,
            TextContent,
        )

        _CONTENT_TYPES = (TextContent, ImageContent, AudioContent, ResourceLink, EmbeddedResource)
    return _CONTENT_TYPES


def to_text(value: Any) -> str:
    """A value as the text a model reads (strings as they are, the rest as JSON)."""
    if isinstance(value, str):
        return value
    import pydantic_core

    return pydantic_core.to_json(value, fallback=str, indent=2).decode()


def to_content(value: Any) -> list[Any]:
    """A tool's return value as content blocks."""
    from mrtr.types import TextContent

    if type(value) is str:  # the usual return: one text block, nothing to look up
        return [TextContent(type="text", text=value)]
    if value is None:
        return []
    if isinstance(value, _content_types()):
        return [value]
    if isinstance(value, (list, tuple)):
        blocks: list[Any] = []
        for item in value:
            blocks.extend(to_content(item))
        return blocks
    return [TextContent(type="text", text=to_text(value))]


@dataclasses.dataclass(frozen=True, slots=True)
class OutputSpec:
    """A tool's structured output: its schema and how a return value becomes it."""

    schema: dict[str, Any]
    adapter: TypeAdapter[Any]
    wrap: bool
    plain: type | None = None  # a wrapped str, int or bool: such a value is its own dump

    def structured(self, value: Any) -> dict[str, Any]:
        """The ``structuredContent`` of `value` (raises when it is not of the type)."""
        if self.wrap and type(value) is self.plain:  # a str for a str: nothing to check
            return {"result": value}
        payload = {"result": value} if self.wrap else value
        dumped: dict[str, Any] = self.adapter.dump_python(
            self.adapter.validate_python(payload), mode="json"
        )
        return dumped


def _strip_input_required(annotation: Any) -> Any:
    from mrtr.types import InputRequiredResult

    if get_origin(annotation) in (Union, types.UnionType):
        arms = [a for a in get_args(annotation) if a is not InputRequiredResult]
        if len(arms) == len(get_args(annotation)):
            return annotation
        return arms[0] if len(arms) == 1 else Union[tuple(arms)]  # noqa: UP007
    return annotation


def _is_content_annotation(annotation: Any) -> bool:
    content = _content_types()
    if isinstance(annotation, type) and issubclass(annotation, content):
        return True
    if get_origin(annotation) in (list, tuple, Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not Ellipsis]
        return bool(args) and all(_is_content_annotation(a) for a in args)
    return False


def _is_object(annotation: Any) -> bool:
    if isinstance(annotation, type) and (
        issubclass(annotation, BaseModel)
        or dataclasses.is_dataclass(annotation)
        or is_typeddict(annotation)
    ):
        return True
    if get_origin(annotation) is dict:
        args = get_args(annotation)
        return not args or args[0] is str
    return False


def output_spec(name: str, annotation: Any, structured_output: bool | None) -> OutputSpec | None:
    """The structured output a return annotation declares (``None``: content only).

    Objects (models, dataclasses, TypedDicts, ``dict[str, X]``) are the output as they
    are; any other type is wrapped as ``{"result": value}``. Content blocks, a
    `CallToolResult` and no annotation at all give no output schema unless
    ``structured_output=True``.
    """
    from mrtr.types import CallToolResult

    if structured_output is False or annotation is None:
        return None
    annotation = _strip_input_required(annotation)
    if annotation is type(None) or annotation is Any:
        return None
    if isinstance(annotation, type) and issubclass(annotation, CallToolResult):
        return None
    if structured_output is None and _is_content_annotation(annotation):
        return None
    if _is_object(annotation):
        adapter: TypeAdapter[Any] = TypeAdapter(annotation)
        return OutputSpec(adapter.json_schema(mode="serialization"), adapter, wrap=False)
    model = create_model(f"{name}Output", result=(annotation, ...))
    adapter = TypeAdapter(model)
    plain = annotation if annotation in (str, int, bool) else None
    schema = model.model_json_schema(mode="serialization")
    return OutputSpec(schema, adapter, wrap=True, plain=plain)
