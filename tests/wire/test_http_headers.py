"""x-mcp-header validation and Mcp-Param-* / Mcp-Name value encoding (pure functions)."""

from __future__ import annotations

from typing import Any

import pytest

from mrtr._wire.http_headers import (
    InvalidToolDefinition,
    ParamHeader,
    encode_header_value,
    param_headers,
    tool_param_headers,
)


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        ("us-west1", "us-west1"),
        ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
        (" padded ", "=?base64?IHBhZGRlZCA=?="),
        ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
        ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
        ("tab\there", "=?base64?dGFiCWhlcmU=?="),
        ("a b", "a b"),
        ("=?base64?no-suffix", "=?base64?no-suffix"),
        ("", ""),
    ],
)
def test_encode_header_value(value: str, encoded: str) -> None:
    assert encode_header_value(value) == encoded


def tool(properties: dict[str, Any], **schema: Any) -> dict[str, Any]:
    return {"name": "t", "inputSchema": {"type": "object", "properties": properties, **schema}}


def test_valid_annotations_with_nested_path() -> None:
    definition = tool(
        {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "opts": {
                "type": "object",
                "properties": {"level": {"type": ["integer", "null"], "x-mcp-header": "Level"}},
            },
            "plain": {"type": "string"},
            "x-mcp-header": {"type": "string"},  # a property *named* x-mcp-header is fine
        }
    )
    assert tool_param_headers(definition) == (
        ParamHeader(path=("region",), name="Region"),
        ParamHeader(path=("opts", "level"), name="Level"),
    )


def test_tool_without_schema_or_annotations() -> None:
    assert tool_param_headers({"name": "t"}) == ()
    assert (
        tool_param_headers(tool({"a": {"type": "string", "default": {"x-mcp-header": "X"}}})) == ()
    )


@pytest.mark.parametrize(
    ("definition", "reason"),
    [
        (tool({"a": {"type": "string", "x-mcp-header": ""}}), "non-empty"),
        (tool({"a": {"type": "string", "x-mcp-header": 3}}), "non-empty"),
        (tool({"a": {"type": "string", "x-mcp-header": "has space"}}), "token"),
        (tool({"a": {"type": "string", "x-mcp-header": "bad\r\nX-Evil: 1"}}), "token"),
        (tool({"a": {"type": "string", "x-mcp-header": "Région"}}), "token"),
        (
            tool(
                {
                    "a": {"type": "string", "x-mcp-header": "Dup"},
                    "b": {"type": "string", "x-mcp-header": "dup"},
                }
            ),
            "unique",
        ),
        (tool({"a": {"type": "number", "x-mcp-header": "A"}}), "number"),
        (tool({"a": {"type": "object", "x-mcp-header": "A"}}), "object"),
        (tool({"a": {"x-mcp-header": "A"}}), "None"),
        (tool({"a": {"type": ["string", "integer"], "x-mcp-header": "A"}}), "only string"),
        (
            tool({"a": {"type": "array", "items": {"type": "string", "x-mcp-header": "A"}}}),
            "reachable",
        ),
        (
            tool({}, anyOf=[{"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}]),
            "reachable",
        ),
        (tool({}, **{"$defs": {"d": {"type": "string", "x-mcp-header": "A"}}}), "reachable"),
        (
            tool(
                {"a": {"$ref": "#/$defs/d", "x-mcp-header": "A", "type": "string"}},
                **{"$defs": {"d": {"type": "string"}}},
            ),
            None,
        ),
        ({"name": "t", "inputSchema": {"type": "object", "x-mcp-header": "Root"}}, "reachable"),
    ],
)
def test_invalid_definitions(definition: dict[str, Any], reason: str | None) -> None:
    if reason is None:  # an annotation next to $ref on a reachable primitive is still valid
        assert tool_param_headers(definition)
        return
    with pytest.raises(InvalidToolDefinition, match=reason):
        tool_param_headers(definition)


def test_param_headers_extraction() -> None:
    specs = (
        ParamHeader(("s",), "S"),
        ParamHeader(("i",), "I"),
        ParamHeader(("b",), "B"),
        ParamHeader(("o", "deep"), "Deep"),
        ParamHeader(("missing",), "Missing"),
        ParamHeader(("n",), "N"),
        ParamHeader(("f",), "F"),
        ParamHeader(("big",), "Big"),
        ParamHeader(("obj",), "Obj"),
    )
    arguments = {
        "s": "x y",
        "i": -7,
        "b": False,
        "o": {"deep": "é"},
        "n": None,
        "f": 42.0,
        "big": 2**53,
        "obj": {"a": 1},
    }
    assert param_headers(specs, arguments) == {
        "Mcp-Param-S": "x y",
        "Mcp-Param-I": "-7",
        "Mcp-Param-B": "false",
        "Mcp-Param-Deep": "=?base64?w6k=?=",
        "Mcp-Param-F": "42",
    }
    assert param_headers(specs, None) == {}
    assert param_headers(specs, {"o": "not an object"}) == {}
