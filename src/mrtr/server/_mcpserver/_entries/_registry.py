"""`Registry`: the four tables an `MCPServer` registers into, and the resource lookup."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mrtr.server._mcpserver._entries._resource import climbing_variable

if TYPE_CHECKING:
    from mrtr.server._mcpserver._entries._prompt import PromptEntry
    from mrtr.server._mcpserver._entries._resource import ResourceEntry
    from mrtr.server._mcpserver._entries._tool import ToolEntry

__all__ = ["Registry"]


@dataclass(eq=False, slots=True)
class Registry:
    """What is registered, by name (tools, prompts) or URI (resources, templates).

    The app writes it (decorators, ``remove_tool``); a request reads it, through the
    app's `AppSpec`, at the moment it is served.
    """

    tools: dict[str, ToolEntry] = field(default_factory=dict)
    prompts: dict[str, PromptEntry] = field(default_factory=dict)
    resources: dict[str, ResourceEntry] = field(default_factory=dict)
    templates: dict[str, ResourceEntry] = field(default_factory=dict)

    def find_resource(
        self, uri: str, *, max_uri_length: int, allow_path_traversal: bool
    ) -> tuple[ResourceEntry, dict[str, str]] | None:
        """The entry serving `uri` and its variables, or ``None``.

        Raises:
            MCPError: -32602, the URI is longer than `max_uri_length`, or a variable
                holds a ``..`` segment (unless path traversal is allowed).
        """
        from mrtr.errors import MCPError
        from mrtr.types import INVALID_PARAMS

        if len(uri) > max_uri_length:
            raise MCPError(
                INVALID_PARAMS,
                f"URI too long: {len(uri)} characters, the limit is {max_uri_length}",
                {"maxUriLength": max_uri_length},
            )
        static = self.resources.get(uri)
        if static is not None:
            return static, {}
        for entry in self.templates.values():
            variables = entry.match(uri)
            if variables is None:
                continue
            allowed = entry.allow_path_traversal
            if allowed is None:
                allowed = allow_path_traversal
            name = None if allowed else climbing_variable(variables)
            if name is not None:
                raise MCPError(
                    INVALID_PARAMS,
                    f"Invalid URI {uri}: the variable {name!r} holds a '..' path segment",
                    {"uri": uri},
                )
            return entry, variables
        return None
