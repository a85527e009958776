"""The `ClientSession` requests answered in one round trip: the list pages and ``complete``.

`SessionLists` is mixed into `ClientSession` (over the era-only requests of
`EraMethods`); each request goes straight to the JSON-RPC connection and its result is
parsed strictly.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mrtr._session_era import EraMethods

if TYPE_CHECKING:
    from pydantic import BaseModel

    from mrtr.transports import JSONObject
    from mrtr.types import (
        CompleteResult,
        ListPromptsResult,
        ListResourcesResult,
        ListResourceTemplatesResult,
        ListToolsResult,
    )

__all__ = ["SessionLists"]


class SessionLists(EraMethods):
    """One page of tools, prompts, resources or templates, and completions."""

    async def list_tools(
        self, cursor: str | None = None, *, read_timeout_seconds: float | None = None
    ) -> ListToolsResult:
        """List one page of tools (``tools/list``).

        Raises:
            MCPError, RequestTimeoutError, TransportError, ProtocolError: as `send_request`.
        """
        page: ListToolsResult = await self._list_page("tools/list", cursor, read_timeout_seconds)
        return page

    async def list_prompts(
        self, cursor: str | None = None, *, read_timeout_seconds: float | None = None
    ) -> ListPromptsResult:
        """List one page of prompts (``prompts/list``); raises as `list_tools`."""
        page: ListPromptsResult = await self._list_page(
            "prompts/list", cursor, read_timeout_seconds
        )
        return page

    async def list_resources(
        self, cursor: str | None = None, *, read_timeout_seconds: float | None = None
    ) -> ListResourcesResult:
        """List one page of resources (``resources/list``); raises as `list_tools`."""
        page: ListResourcesResult = await self._list_page(
            "resources/list", cursor, read_timeout_seconds
        )
        return page

    async def list_resource_templates(
        self, cursor: str | None = None, *, read_timeout_seconds: float | None = None
    ) -> ListResourceTemplatesResult:
        """List one page of resource templates; raises as `list_tools`."""
        page: ListResourceTemplatesResult = await self._list_page(
            "resources/templates/list", cursor, read_timeout_seconds
        )
        return page

    async def _list_page(self, method: str, cursor: str | None, timeout: float | None) -> Any:
        from mrtr.types import parse_result

        params = {"cursor": cursor} if cursor is not None else None
        raw = await self._connection.send_request(method, params, timeout=timeout)
        return parse_result(method, raw)

    async def complete(
        self,
        ref: Mapping[str, Any] | BaseModel,
        argument: Mapping[str, str],
        context_arguments: Mapping[str, str] | None = None,
        *,
        read_timeout_seconds: float | None = None,
    ) -> CompleteResult:
        """Ask for completions of a prompt or resource-template argument.

        Args:
            ref: a `PromptReference` / `ResourceTemplateReference` (or its wire dict).
            argument: ``{"name": ..., "value": ...}``, the argument being completed.
            context_arguments: values of arguments already filled in.
            read_timeout_seconds: this request's timeout.

        Raises:
            MCPError, RequestTimeoutError, TransportError, ProtocolError: as `send_request`.
        """
        from pydantic import BaseModel

        from mrtr.types import parse_result

        wire_ref = (
            ref.model_dump(by_alias=True, exclude_none=True)
            if isinstance(ref, BaseModel)
            else dict(ref)
        )
        params: JSONObject = {"ref": wire_ref, "argument": dict(argument)}
        if context_arguments is not None:
            params["context"] = {"arguments": dict(context_arguments)}
        raw = await self._connection.send_request(
            "completion/complete", params, timeout=read_timeout_seconds
        )
        return parse_result("completion/complete", raw)
