"""`ToolEntry`: a decorated tool, listed and called."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

import mrtr.types as wire
from mrtr.errors import MCPError
from mrtr.server._mcpserver._entries._convert import OutputSpec, to_content
from mrtr.server._mcpserver._errors import CallFailed, ToolError
from mrtr.server._mcpserver._resolve._handler import HandlerSpec, describe_validation
from mrtr.server._mcpserver._rounds._call import call

if TYPE_CHECKING:
    from mrtr.server._core._context import ServerRequestContext
    from mrtr.server._mcpserver._spec import AppSpec
    from mrtr.types import CallToolResult, InputRequiredResult, Tool

__all__ = ["ToolEntry"]

_logger = logging.getLogger("mrtr.server.mcpserver")


def error_result(text: str) -> CallToolResult:
    """An ``is_error`` tool result (what the model reads)."""
    from mrtr.types import CallToolResult, TextContent

    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


@dataclass(frozen=True, slots=True)
class ToolEntry:
    """A tool: its handler and what ``tools/list`` says of it."""

    spec: HandlerSpec
    title: str | None
    description: str | None
    annotations: Any
    icons: Any
    meta: dict[str, Any] | None
    output: OutputSpec | None
    schema: dict[str, Any] | None = None
    task: str = "forbidden"  # the Tasks extension: forbidden, optional or required

    def definition(self) -> Tool:
        """The tool as ``tools/list`` shows it."""
        from mrtr.types import Tool

        return Tool(
            name=self.spec.name,
            title=self.title,
            description=self.description,
            input_schema=self.schema if self.schema is not None else self.spec.input_schema(),
            output_schema=None if self.output is None else self.output.schema,
            annotations=self.annotations,
            icons=self.icons,
            _meta=self.meta,
        )

    async def call(
        self,
        app: AppSpec,
        request: ServerRequestContext | None,
        arguments: dict[str, Any],
        *,
        resolve_only: bool = False,
    ) -> CallToolResult | InputRequiredResult | None:
        """Validate, resolve, run the body once; errors become ``is_error`` results.

        With ``resolve_only``, stop before the body: ``None`` when every resolver has
        its value (the body may run), else the round's question or an error result.
        """
        name = self.spec.name
        try:
            validated = self.spec.validate(arguments)
        except ValidationError as exc:
            described = describe_validation(exc)
            _logger.info("tool %r rejected its arguments: %s", name, described)
            return error_result(f"Error executing tool {name}: {described}")
        try:
            return await call(
                app, self.spec, request, validated, self.convert, resolve_only=resolve_only
            )
        except MCPError:
            raise
        except (ToolError, CallFailed) as exc:
            _logger.info("tool %r failed: %r", name, str(exc))
            app.failed(exc)
            return error_result(f"Error executing tool {name}: {exc}")
        except Exception as exc:
            _logger.exception("tool %r raised", name)
            app.failed(exc)
            return error_result(f"Error executing tool {name}")

    def convert(self, result: Any) -> CallToolResult:
        """The body's return value as a `CallToolResult` (with structured output)."""
        if isinstance(result, (wire.CallToolResult, wire.InputRequiredResult)):
            return result  # type: ignore[return-value]  # an IRR passes through (manual form)
        content = to_content(result)
        if self.output is None:
            return wire.CallToolResult(content=content)
        return wire.CallToolResult(
            content=content, structured_content=self.output.structured(result)
        )
