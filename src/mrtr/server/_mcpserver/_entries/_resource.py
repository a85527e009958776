"""`ResourceEntry`: a decorated resource (static URI or RFC 6570 level-1 template)."""

from __future__ import annotations

import base64
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from mrtr.errors import MCPError
from mrtr.server._mcpserver._entries._convert import to_text
from mrtr.server._mcpserver._entries._failure import as_rpc_error
from mrtr.server._mcpserver._entries._uri_template import UriTemplate
from mrtr.server._mcpserver._errors import InvalidSignature
from mrtr.server._mcpserver._resolve._handler import HandlerSpec, describe_validation
from mrtr.server._mcpserver._rounds._call import call

if TYPE_CHECKING:
    from mrtr.server._core._context import ServerRequestContext
    from mrtr.server._mcpserver._spec import AppSpec
    from mrtr.types import InputRequiredResult, ReadResourceResult, Resource, ResourceTemplate

__all__ = ["ResourceEntry", "climbing_variable", "uri_variables"]

_logger = logging.getLogger("mrtr.server.mcpserver")


def uri_variables(uri: str) -> list[str]:
    """The ``{name}`` variables of a URI template, in order."""
    return UriTemplate(uri).names


def climbing_variable(variables: dict[str, str]) -> str | None:
    """The first variable holding a ``..`` path segment (between slashes or backslashes).

    Percent-encoded too. A handler that joins a variable to a directory would climb out
    of it; the check is on segments, so ``v1..v2`` passes.
    """
    from urllib.parse import unquote

    for name, value in variables.items():
        if ".." not in value and "%" not in value:
            continue
        for text in (value, unquote(value)):
            if ".." in text.replace("\\", "/").split("/"):
                return name
    return None


@dataclass(frozen=True, slots=True)
class ResourceEntry:
    """A resource: its handler, its URI (or template) and what the lists say of it."""

    spec: HandlerSpec
    uri: str
    name: str
    title: str | None
    description: str | None
    mime_type: str | None
    icons: Any
    annotations: Any
    meta: dict[str, Any] | None
    matcher: UriTemplate | None
    allow_path_traversal: bool | None = None

    @classmethod
    def build(
        cls, fn: Any, uri: str, *, localns: dict[str, Any] | None = None, **facts: Any
    ) -> ResourceEntry:
        """Analyse `fn` for `uri` (its parameters must be the URI's variables)."""
        variables = uri_variables(uri)
        if len(set(variables)) != len(variables):
            raise InvalidSignature(f"resource {uri!r}: a URI variable appears twice")
        spec = HandlerSpec.build(fn, uri, "resource", by_name=set(variables), localns=localns)
        arguments = {p.name for p in spec.argument_params}
        if arguments != set(variables):
            raise InvalidSignature(
                f"resource {uri!r}: the URI variables {sorted(variables)} and the function's "
                f"arguments {sorted(arguments)} differ (Context and Resolve parameters aside)"
            )
        matcher = UriTemplate(uri) if variables else None
        return cls(spec=spec, uri=uri, matcher=matcher, **facts)

    def match(self, uri: str) -> dict[str, str] | None:
        """The variables of `uri` when this entry serves it, else ``None`` (linear time)."""
        if self.matcher is None:
            return {} if uri == self.uri else None
        return self.matcher.match(uri)

    def definition(self) -> Resource:
        """A static resource as ``resources/list`` shows it."""
        from mrtr.types import Resource

        return Resource(uri=self.uri, **self._listed())

    def template(self) -> ResourceTemplate:
        """A template as ``resources/templates/list`` shows it."""
        from mrtr.types import ResourceTemplate

        return ResourceTemplate(uri_template=self.uri, **self._listed())

    def _listed(self) -> dict[str, Any]:
        """What both lists say of a resource besides its URI."""
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "mime_type": self.mime_type,
            "icons": self.icons,
            "annotations": self.annotations,
            "_meta": self.meta,
        }

    async def read(
        self,
        app: AppSpec,
        request: ServerRequestContext | None,
        uri: str,
        variables: dict[str, str],
    ) -> ReadResourceResult | InputRequiredResult:
        """Resolve, run the body once, and wrap what it returns as contents."""
        from mrtr.types import INVALID_PARAMS, ReadResourceResult

        try:
            validated = self.spec.validate(variables)
        except ValidationError as exc:
            raise MCPError(
                INVALID_PARAMS, f"Invalid URI {uri}: {describe_validation(exc)}", {"uri": uri}
            ) from None

        def convert(result: Any) -> ReadResourceResult:
            if isinstance(result, ReadResourceResult):
                return result
            return ReadResourceResult(contents=self._contents(uri, result))

        try:
            return await call(app, self.spec, request, validated, convert)
        except MCPError:
            raise
        except Exception as exc:
            doing = f"reading resource {uri}"
            raise as_rpc_error(app, exc, "resource", uri, doing, {"uri": uri}) from None

    def _contents(self, uri: str, value: Any) -> list[Any]:
        from mrtr.types import BlobResourceContents, ResourceContents, TextResourceContents

        if isinstance(value, ResourceContents):
            return [value]
        if isinstance(value, (bytes, bytearray)):
            blob = base64.b64encode(bytes(value)).decode()
            mime = self.mime_type or "application/octet-stream"
            return [BlobResourceContents(uri=uri, blob=blob, mime_type=mime)]
        if (
            isinstance(value, (list, tuple))
            and value
            and all(isinstance(v, ResourceContents) for v in value)
        ):
            return list(value)
        return [
            TextResourceContents(
                uri=uri, text=to_text(value), mime_type=self.mime_type or "text/plain"
            )
        ]
