"""Content blocks, resource contents and the small objects they share."""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeAlias

from pydantic import Discriminator, Field, Tag

from mrtr._lazy import publish
from mrtr.types._base import Meta, WireModel

__all__ = [
    "Annotations",
    "AnyResourceContents",
    "AudioContent",
    "BlobResourceContents",
    "ContentBlock",
    "EmbeddedResource",
    "Icon",
    "ImageContent",
    "ResourceContents",
    "ResourceLink",
    "Role",
    "SamplingMessageContentBlock",
    "TextContent",
    "TextResourceContents",
    "ToolResultContent",
    "ToolUseContent",
]

Role: TypeAlias = Literal["user", "assistant"]
"""Who speaks a message: the user or the assistant."""


class Icon(WireModel):
    """An icon a client may show for a server, tool, prompt or resource."""

    src: str
    mime_type: str | None = None
    sizes: list[str] | None = None
    theme: Literal["light", "dark"] | None = None


class Annotations(WireModel):
    """Hints on how a client should use or show an object."""

    audience: list[Role] | None = None
    priority: float | None = None
    last_modified: str | None = None


class _Block(WireModel):
    meta: Meta | None = Field(default=None, alias="_meta")


class TextContent(_Block):
    """Text."""

    type: Literal["text"] = "text"
    text: str
    annotations: Annotations | None = None


class ImageContent(_Block):
    """An image, base64-encoded."""

    type: Literal["image"] = "image"
    data: str
    mime_type: str
    annotations: Annotations | None = None


class AudioContent(_Block):
    """Audio, base64-encoded."""

    type: Literal["audio"] = "audio"
    data: str
    mime_type: str
    annotations: Annotations | None = None


class ResourceContents(_Block):
    """What a resource holds, at one URI."""

    uri: str
    mime_type: str | None = None


class TextResourceContents(ResourceContents):
    """Text contents of a resource."""

    text: str


class BlobResourceContents(ResourceContents):
    """Binary contents of a resource, base64-encoded."""

    blob: str


def _contents_kind(value: Any) -> str | None:
    if isinstance(value, dict):
        if "text" in value:
            return "text"
        return "blob" if "blob" in value else None
    if isinstance(value, TextResourceContents):
        return "text"
    return "blob" if isinstance(value, BlobResourceContents) else None


AnyResourceContents: TypeAlias = Annotated[
    Annotated[TextResourceContents, Tag("text")] | Annotated[BlobResourceContents, Tag("blob")],
    Discriminator(_contents_kind),
]
"""A resource's contents, text or blob (told apart by which field is present)."""


class ResourceLink(_Block):
    """A pointer to a resource the client may read."""

    type: Literal["resource_link"] = "resource_link"
    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    annotations: Annotations | None = None
    icons: list[Icon] | None = None


class EmbeddedResource(_Block):
    """A resource's contents, inline."""

    type: Literal["resource"] = "resource"
    resource: AnyResourceContents
    annotations: Annotations | None = None


ContentBlock: TypeAlias = Annotated[
    TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource,
    Field(discriminator="type"),
]
"""Content in tool results and prompt messages, discriminated by `type`."""


class ToolUseContent(_Block):
    """A model's request to call a tool (sampling with tools)."""

    type: Literal["tool_use"] = "tool_use"
    id: str
    name: str
    input: dict[str, Any]


class ToolResultContent(_Block):
    """The result of a tool call, fed back to the model (sampling with tools)."""

    type: Literal["tool_result"] = "tool_result"
    tool_use_id: str
    content: list[ContentBlock]
    structured_content: Any = None
    is_error: bool | None = None


SamplingMessageContentBlock: TypeAlias = Annotated[
    TextContent | ImageContent | AudioContent | ToolUseContent | ToolResultContent,
    Field(discriminator="type"),
]
"""Content in sampling messages, discriminated by `type`."""

publish(
    "mrtr.types",
    Annotations,
    AudioContent,
    BlobResourceContents,
    EmbeddedResource,
    Icon,
    ImageContent,
    ResourceContents,
    ResourceLink,
    TextContent,
    TextResourceContents,
    ToolResultContent,
    ToolUseContent,
)
