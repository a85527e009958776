"""`PromptEntry`: a decorated prompt, listed and rendered; `UserMessage`, `AssistantMessage`."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from mrtr._lazy import publish
from mrtr.errors import MCPError
from mrtr.server._mcpserver._entries._failure import as_rpc_error
from mrtr.server._mcpserver._resolve._handler import HandlerSpec, describe_validation
from mrtr.server._mcpserver._rounds._call import call

if TYPE_CHECKING:
    from mrtr.server._core._context import ServerRequestContext
    from mrtr.server._mcpserver._spec import AppSpec
    from mrtr.types import GetPromptResult, InputRequiredResult, Prompt, PromptMessage

__all__ = ["AssistantMessage", "PromptEntry", "UserMessage"]

_logger = logging.getLogger("mrtr.server.mcpserver")


def _message(role: str, content: Any) -> PromptMessage:
    from mrtr.types import PromptMessage, TextContent

    if isinstance(content, str):
        content = TextContent(type="text", text=content)
    return PromptMessage(role=role, content=content)


def UserMessage(content: Any) -> PromptMessage:
    """A user message of a prompt (text or a content block)."""
    return _message("user", content)


def AssistantMessage(content: Any) -> PromptMessage:
    """An assistant message of a prompt (text or a content block)."""
    return _message("assistant", content)


def _messages(value: Any) -> list[PromptMessage]:
    from mrtr.types import PromptMessage

    if isinstance(value, PromptMessage):
        return [value]
    if isinstance(value, str):
        return [UserMessage(value)]
    if isinstance(value, dict):
        return [PromptMessage.model_validate(value)]
    if isinstance(value, (list, tuple)):
        return [message for item in value for message in _messages(item)]
    raise TypeError(f"a prompt cannot return a {type(value).__name__}")


@dataclass(frozen=True, slots=True)
class PromptEntry:
    """A prompt: its handler and what ``prompts/list`` says of it."""

    spec: HandlerSpec
    title: str | None
    description: str | None
    icons: Any
    meta: dict[str, Any] | None

    def definition(self) -> Prompt:
        """The prompt as ``prompts/list`` shows it (resolved parameters are not in it)."""
        import inspect

        from mrtr.types import Prompt, PromptArgument

        arguments = [
            PromptArgument(name=p.name, required=p.default is inspect.Parameter.empty)
            for p in self.spec.argument_params
        ]
        return Prompt(
            name=self.spec.name,
            title=self.title,
            description=self.description,
            arguments=arguments or None,
            icons=self.icons,
            _meta=self.meta,
        )

    async def render(
        self, app: AppSpec, request: ServerRequestContext | None, arguments: dict[str, Any]
    ) -> GetPromptResult | InputRequiredResult:
        """Validate, resolve, run the body once; failures are JSON-RPC errors."""
        from mrtr.types import INVALID_PARAMS

        name = self.spec.name
        try:
            validated = self.spec.validate(arguments)
        except ValidationError as exc:
            raise MCPError(
                INVALID_PARAMS, f"Invalid arguments for prompt {name}: {describe_validation(exc)}"
            ) from None
        try:
            return await call(app, self.spec, request, validated, self.convert)
        except MCPError:
            raise
        except Exception as exc:
            raise as_rpc_error(app, exc, "prompt", name, f"rendering prompt {name}") from None

    def convert(self, result: Any) -> GetPromptResult:
        """The body's return value as a `GetPromptResult` (text, messages, or one)."""
        from mrtr.types import GetPromptResult

        if isinstance(result, GetPromptResult):
            return result
        return GetPromptResult(description=self.description, messages=_messages(result))


publish("mrtr.server", AssistantMessage, UserMessage)
