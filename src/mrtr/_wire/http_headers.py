"""Request metadata headers of the modern Streamable HTTP transport (protocol 2026-07-28).

Pure functions, no I/O: encoding a value for a header (the Base64 sentinel for values
that are not plain header-safe ASCII), validating the ``x-mcp-header`` annotations of a
tool's ``inputSchema``, extracting the ``Mcp-Param-*`` headers of a ``tools/call``, and
`ToolHeaderRegistry`, which learns each tool's headers from ``tools/list`` results.
"""

from __future__ import annotations

import base64
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mrtr.types._constants import BASE64_HEADER_PREFIX, BASE64_HEADER_SUFFIX

__all__ = [
    "MCP_PARAM_PREFIX",
    "InvalidToolDefinition",
    "ParamHeader",
    "ToolHeaderRegistry",
    "encode_header_value",
    "modern_headers",
    "param_headers",
    "tool_param_headers",
]

_logger = logging.getLogger("mrtr.transports.http")

MCP_PARAM_PREFIX = "Mcp-Param-"
_ANNOTATION = "x-mcp-header"
_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")
_SAFE_VALUE = re.compile(r"^[\x20-\x7e]*$")
_PRIMITIVE_TYPES = frozenset({"string", "integer", "boolean"})
_MAX_SAFE_INTEGER = 2**53 - 1
# Keywords whose values are instance data, not subschemas: never look for annotations there.
_DATA_KEYWORDS = frozenset({"const", "default", "enum", "examples"})


class InvalidToolDefinition(ValueError):
    """A tool's ``x-mcp-header`` annotations break the spec's constraints."""


@dataclass(frozen=True, slots=True)
class ParamHeader:
    """One annotated parameter: where its value sits in the arguments, and its header."""

    path: tuple[str, ...]
    name: str

    @property
    def header(self) -> str:
        """The full header name, ``Mcp-Param-{name}``."""
        return MCP_PARAM_PREFIX + self.name


def encode_header_value(value: str) -> str:
    """Return ``value`` as a header value, Base64-wrapped when it is not plainly safe.

    A value is sent as-is only if it is visible ASCII or space, has no leading or
    trailing whitespace, and does not itself look like the sentinel ``=?base64?...?=``.
    """
    plain = (
        _SAFE_VALUE.match(value) is not None
        and value == value.strip(" ")
        and not (value.startswith(BASE64_HEADER_PREFIX) and value.endswith(BASE64_HEADER_SUFFIX))
    )
    if plain:
        return value
    encoded = base64.b64encode(value.encode("utf-8")).decode("ascii")
    return f"{BASE64_HEADER_PREFIX}{encoded}{BASE64_HEADER_SUFFIX}"


def tool_param_headers(tool: Mapping[str, Any]) -> tuple[ParamHeader, ...]:
    """Validate one tool definition's ``x-mcp-header`` annotations and return them.

    Raises:
        InvalidToolDefinition: an annotation is not a token, is duplicated
            (case-insensitively), sits on a non-primitive property, or is not statically
            reachable from the schema root through ``properties`` alone.
    """
    schema = tool.get("inputSchema")
    if not isinstance(schema, Mapping):
        return ()
    found = _collect(schema)
    seen: set[str] = set()
    for item in found:
        key = item.name.lower()
        if key in seen:
            raise InvalidToolDefinition(f"x-mcp-header {item.name!r} is not unique")
        seen.add(key)
    return tuple(found)


def _collect(root: Mapping[str, Any]) -> list[ParamHeader]:
    """Every annotation in the schema, in document order.

    A loop with its own stack, not recursion: a server's schema may nest deeper than
    Python's recursion limit and is still a valid tool.
    """
    found: list[ParamHeader] = []
    # (a schema or list of schemas, its property path, reachable through 'properties' alone)
    stack: list[tuple[Any, tuple[str, ...], bool]] = [(root, (), True)]
    while stack:
        value, path, reachable = stack.pop()
        children: list[tuple[Any, tuple[str, ...], bool]] = []
        if isinstance(value, Mapping):
            for key, sub in value.items():
                if key == _ANNOTATION:
                    found.append(_check_annotation(value, sub, path=path, reachable=reachable))
                elif key == "properties" and isinstance(sub, Mapping):
                    children += [
                        (schema, (*path, str(prop)), reachable)
                        for prop, schema in sub.items()
                        if isinstance(schema, Mapping)
                    ]
                elif key not in _DATA_KEYWORDS:
                    # items, anyOf, $defs...: not statically reachable properties
                    children.append((sub, (), False))
        elif isinstance(value, Sequence) and not isinstance(value, str):
            children += [(item, (), False) for item in value]
        stack.extend(reversed(children))
    return found


def _check_annotation(
    schema: Mapping[str, Any], name: Any, *, path: tuple[str, ...], reachable: bool
) -> ParamHeader:
    if not isinstance(name, str) or not name:
        raise InvalidToolDefinition(f"x-mcp-header must be a non-empty string, not {name!r}")
    if _TOKEN.match(name) is None:
        raise InvalidToolDefinition(f"x-mcp-header {name!r} is not an HTTP field-name token")
    if not reachable or not path:
        raise InvalidToolDefinition(
            f"x-mcp-header {name!r} is not on a property reachable from the schema root "
            "through 'properties' alone"
        )
    if not _is_primitive(schema.get("type")):
        raise InvalidToolDefinition(
            f"x-mcp-header {name!r} is on a property of type {schema.get('type')!r}; "
            "only string, integer and boolean are allowed"
        )
    return ParamHeader(path=path, name=name)


def _is_primitive(declared: Any) -> bool:
    if isinstance(declared, str):
        return declared in _PRIMITIVE_TYPES
    if isinstance(declared, list):
        kinds = {kind for kind in declared if kind != "null"}
        return len(kinds) == 1 and kinds <= _PRIMITIVE_TYPES
    return False


def param_headers(specs: Sequence[ParamHeader], arguments: Any) -> dict[str, str]:
    """Return the ``Mcp-Param-*`` headers for one call's arguments.

    A parameter that is absent or ``null`` gets no header; a value of a type the header
    cannot carry (an object, a list, a fraction) gets none either, and the server's
    validation will say so.
    """
    headers: dict[str, str] = {}
    for spec in specs:
        value = _lookup(arguments, spec.path)
        text = _header_text(value)
        if text is not None:
            headers[spec.header] = encode_header_value(text)
    return headers


def _lookup(arguments: Any, path: tuple[str, ...]) -> Any:
    value = arguments
    for key in path:
        if not isinstance(value, Mapping) or key not in value:
            return None
        value = value[key]
    return value


def _header_text(value: Any) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value) if abs(value) <= _MAX_SAFE_INTEGER else None
    if isinstance(value, float) and value.is_integer() and abs(value) <= _MAX_SAFE_INTEGER:
        return str(int(value))
    if isinstance(value, str):
        return value
    return None


class ToolHeaderRegistry:
    """The ``Mcp-Param-*`` headers of each listed tool, learned from ``tools/list`` results.

    Sans-IO: `learn` reads a result (and returns it without the tools whose annotations
    are invalid, which the spec requires a client to drop), `headers_for` builds the
    headers of one ``tools/call``.
    """

    def __init__(self) -> None:
        self._tools: dict[str, tuple[ParamHeader, ...]] = {}

    def learn(self, result: Mapping[str, Any]) -> dict[str, Any]:
        """Record the headers of the listed tools; return the result minus invalid tools."""
        tools = result.get("tools")
        if not isinstance(tools, list):
            return dict(result)
        kept: list[Any] = []
        for tool in tools:
            name = tool.get("name") if isinstance(tool, dict) else None
            if not isinstance(name, str):
                kept.append(tool)
                continue
            try:
                self._tools[name] = tool_param_headers(tool)
            except InvalidToolDefinition as exc:
                self._tools.pop(name, None)
                _logger.warning("dropping tool %r from tools/list: %s", name, exc)
                continue
            kept.append(tool)
        return {**result, "tools": kept}

    def headers_for(self, name: str, arguments: Any) -> dict[str, str]:
        """The ``Mcp-Param-*`` headers of a call of tool `name` with `arguments`."""
        specs = self._tools.get(name)
        return param_headers(specs, arguments) if specs else {}


_NAMED_METHODS = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    # the tasks extension: the task id names the request, so a load balancer can route
    # every request about one task to the instance that holds it
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}


def modern_headers(
    message: Mapping[str, Any], version: str, tools: ToolHeaderRegistry
) -> dict[str, str]:
    """The request metadata headers of one modern request: version, method, name, params."""
    method: str = message["method"]
    headers = {"MCP-Protocol-Version": version, "Mcp-Method": method}
    params = message.get("params")
    if not isinstance(params, dict):
        return headers
    name = params.get(_NAMED_METHODS.get(method, ""))
    if isinstance(name, str):
        headers["Mcp-Name"] = encode_header_value(name)
        if method == "tools/call":
            headers.update(tools.headers_for(name, params.get("arguments")))
    return headers
