"""Tool arguments from the command line, typed by the tool's own ``inputSchema``.

``k=v`` is coerced by the property's schema type, so a string property stays a string
even when the value looks like a number (``zip=10001`` sends ``"10001"``); ``k:=JSON``
forces JSON; ``k=@file`` reads a file's text and ``k:=@file.json`` its JSON. ``--args``
gives a base object (inline JSON, ``@file``, or ``-`` for stdin, which is read only then).
Missing required arguments and enum mismatches are usage errors that show the signature.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mrtr.cli._exit import UsageError

__all__ = ["build_arguments", "coerce_value", "parse_pairs", "schema_help", "signature"]

_TRUE = {"true", "yes", "y", "1", "on"}
_FALSE = {"false", "no", "n", "0", "off"}
_SHORT = {"string": "str", "integer": "int", "number": "float", "boolean": "bool"}


def schema_types(schema: Mapping[str, Any]) -> list[str]:
    """The JSON types a property accepts (from ``type``, ``anyOf`` or ``oneOf``)."""
    kind = schema.get("type")
    if isinstance(kind, str):
        return [kind]
    if isinstance(kind, list):
        return [str(k) for k in kind]
    found: list[str] = []
    for key in ("anyOf", "oneOf"):
        for option in schema.get(key) or []:
            if isinstance(option, dict):
                found += [t for t in schema_types(option) if t not in found]
    if not found and "enum" in schema:
        found = sorted({_json_type(v) for v in schema["enum"]})
    return found


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if value is None:
        return "null"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "string"


def coerce_value(text: str, schema: Mapping[str, Any], name: str) -> Any:
    """Turn the text of ``name=text`` into the value its schema asks for.

    Raises:
        UsageError: the text fits none of the property's types.
    """
    types = schema_types(schema)
    if not types or "string" in types:
        return text
    for kind in types:
        try:
            return _AS[kind](text)
        except (KeyError, ValueError):
            continue
    raise UsageError(f"{name}: expected {' or '.join(types)}, got {text!r}")


def _as_number(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(text)  # NaN and infinities are no JSON
    return int(number) if number.is_integer() and "." not in text and "e" not in text else number


def _as_boolean(text: str) -> bool:
    if text.lower() not in _TRUE | _FALSE:
        raise ValueError(text)
    return text.lower() in _TRUE


def _as_null(text: str) -> None:
    if text not in ("null", ""):
        raise ValueError(text)


def _as_json(kind: type) -> Any:
    def parse(text: str) -> Any:
        value = json.loads(text)  # JSONDecodeError is a ValueError
        if not isinstance(value, kind):
            raise ValueError(text)
        return value

    return parse


_AS: dict[str, Any] = {
    "integer": int,
    "number": _as_number,
    "boolean": _as_boolean,
    "null": _as_null,
    "array": _as_json(list),
    "object": _as_json(dict),
}


def _read_file(path: str, name: str) -> str:
    try:
        if path == "-":
            return sys.stdin.read()
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{name}: cannot read {path}: {exc}") from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON a server takes")


def _load_json(text: str, what: str) -> Any:
    try:
        return json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{what}: invalid JSON: {exc.msg} at column {exc.colno}") from None
    except RecursionError:
        raise UsageError(f"{what}: JSON nested too deeply") from None
    except ValueError as exc:  # NaN, Infinity, an integer of more than 4,300 digits
        raise UsageError(f"{what}: {exc}") from None


def parse_pairs(
    pairs: Sequence[str], properties: Mapping[str, Any], *, what: str = "argument"
) -> dict[str, Any]:
    """Parse ``k=v`` / ``k:=JSON`` / ``k=@file`` words against the schema's properties."""
    values: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"{what} {pair!r}: expected KEY=VALUE or KEY:=JSON")
        if key.endswith(":"):
            key = key[:-1]
            source = _read_file(text[1:], key) if text.startswith("@") else text
            values[key] = _load_json(source, key)
            continue
        if text.startswith("@") and len(text) > 1:
            text = _read_file(text[1:], key)
        schema = properties.get(key)
        values[key] = coerce_value(text, schema if isinstance(schema, dict) else {}, key)
    return values


def load_args_option(value: str | None) -> dict[str, Any]:
    """``--args JSON|@file|-``: the base arguments object."""
    if value is None:
        return {}
    text = (
        _read_file(value[1:] if value.startswith("@") else "-", "--args")
        if (value.startswith("@") or value == "-")
        else value
    )
    loaded = _load_json(text, "--args")
    if not isinstance(loaded, dict):
        raise UsageError("--args must be a JSON object")
    return loaded


def _type_label(schema: Mapping[str, Any]) -> str:
    if isinstance(schema.get("enum"), list):
        return "|".join(json.dumps(v) for v in schema["enum"])
    types = schema_types(schema)
    if types == ["array"] and isinstance(schema.get("items"), dict):
        return f"list[{_type_label(schema['items'])}]"
    return "|".join(_SHORT.get(t, t) for t in types) or "any"


def signature(name: str, schema: Mapping[str, Any]) -> str:
    """``name(a: int, b?: str = "x")``: a tool's parameters at a glance."""
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    parts = []
    for key, prop in properties.items():
        prop = prop if isinstance(prop, dict) else {}
        mark = "" if key in required else "?"
        default = f" = {json.dumps(prop['default'])}" if "default" in prop else ""
        parts.append(f"{key}{mark}: {_type_label(prop)}{default}")
    return f"{name}({', '.join(parts)})"


def schema_help(name: str, description: str | None, schema: Mapping[str, Any]) -> str:
    """The help page of one tool, generated from its schema."""
    lines = [f"usage: mrtr call TARGET {name} [KEY=VALUE | KEY:=JSON ...]", ""]
    if description:
        lines += [description.strip(), ""]
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    lines.append("parameters:" if properties else "parameters: none")
    for key, prop in properties.items():
        prop = prop if isinstance(prop, dict) else {}
        flags = ["required" if key in required else "optional"]
        if "default" in prop:
            flags.append(f"default {json.dumps(prop['default'])}")
        lines.append(f"  {key}: {_type_label(prop)}  ({', '.join(flags)})")
        if prop.get("description"):
            lines.append(f"      {prop['description']}")
    return "\n".join(lines)


def build_arguments(
    tool: str,
    schema: Mapping[str, Any] | None,
    pairs: Sequence[str],
    base: Mapping[str, Any],
    *,
    validate: bool = True,
) -> tuple[dict[str, Any], list[str]]:
    """The arguments to send, and warnings (unknown properties).

    Raises:
        UsageError: a value does not fit, a required argument is missing, an enum
            mismatch; the message carries the tool's signature.
    """
    schema = schema or {}
    properties = schema.get("properties") or {}
    arguments = {**base, **parse_pairs(pairs, properties)}
    warnings: list[str] = []
    if not validate:
        return arguments, warnings
    sig = signature(tool, schema)
    missing = [k for k in schema.get("required") or [] if k not in arguments]
    if missing:
        raise UsageError(f"missing required argument(s): {', '.join(missing)}", details=sig)
    for key, value in arguments.items():
        prop = properties.get(key)
        if not isinstance(prop, dict):
            if properties:
                warnings.append(f"{key!r} is not a parameter of {sig}")
            continue
        types = schema_types(prop)
        if (
            types
            and _json_type(value) not in types
            and not (_json_type(value) == "integer" and "number" in types)
        ):
            raise UsageError(
                f"{key}: expected {' or '.join(types)}, got {_json_type(value)}", details=sig
            )
        allowed = prop.get("enum")
        if isinstance(allowed, list) and value not in allowed:
            choices = ", ".join(json.dumps(v) for v in allowed)
            raise UsageError(f"{key}: {json.dumps(value)} is not one of {choices}", details=sig)
    return arguments, warnings
