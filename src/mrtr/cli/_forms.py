"""The fields of an elicitation form: parse typed text, check a value, list the choices.

A form's ``requestedSchema`` is flat: an object whose properties are strings (with
``format``, length and ``pattern`` checks), numbers and integers (with bounds), booleans,
single-select enums (``enum``, ``oneOf`` with ``const``/``title``, or legacy
``enumNames``) and multi-select arrays of those. The terminal prompts and the
non-interactive answers share these rules, so a value is checked the same way wherever it
comes from. Pure functions; no I/O.
"""

from __future__ import annotations

import datetime
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Choice", "check_content", "choices", "defaults", "field_kind", "parse_field"]

_TRUE = {"y", "yes", "true", "1", "on"}
_FALSE = {"n", "no", "false", "0", "off"}
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:\S+$")


@dataclass(frozen=True, slots=True)
class Choice:
    """One option of an enum: the value sent and the label shown."""

    value: Any
    label: str


def choices(prop: Mapping[str, Any]) -> list[Choice] | None:
    """The options of a single-select field, or ``None`` when it is not one."""
    if isinstance(prop.get("enum"), list):
        names = prop.get("enumNames")
        labels = names if isinstance(names, list) and len(names) == len(prop["enum"]) else None
        return [Choice(v, str(labels[i]) if labels else str(v)) for i, v in enumerate(prop["enum"])]
    for key in ("oneOf", "anyOf"):
        options = prop.get(key)
        if (
            isinstance(options, list)
            and options
            and all(isinstance(o, dict) and "const" in o for o in options)
        ):
            return [Choice(o["const"], str(o.get("title") or o["const"])) for o in options]
    return None


def field_kind(prop: Mapping[str, Any]) -> str:
    """``enum``, ``multi``, ``boolean``, ``integer``, ``number`` or ``string``."""
    if choices(prop) is not None:
        return "enum"
    items = prop.get("items")
    if prop.get("type") == "array" and isinstance(items, dict) and choices(items) is not None:
        return "multi"
    kind = prop.get("type")
    return kind if kind in ("boolean", "integer", "number") else "string"


def _check_string(text: str, prop: Mapping[str, Any]) -> str:
    low, high = prop.get("minLength"), prop.get("maxLength")
    if isinstance(low, int) and len(text) < low:
        raise ValueError(f"at least {low} characters")
    if isinstance(high, int) and len(text) > high:
        raise ValueError(f"at most {high} characters")
    pattern = prop.get("pattern")
    if isinstance(pattern, str) and usable_pattern(pattern) and not re.search(pattern, text):
        raise ValueError(f"must match {pattern}")
    fmt = prop.get("format")
    if fmt == "email" and not _EMAIL.match(text):
        raise ValueError("not an email address")
    if fmt == "uri" and not _URI.match(text):
        raise ValueError("not a URI (scheme:rest)")
    if fmt == "date":
        try:
            datetime.date.fromisoformat(text)
        except ValueError:
            raise ValueError("not a date (YYYY-MM-DD)") from None
    if fmt == "date-time":
        try:
            datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise ValueError("not a date-time (YYYY-MM-DDTHH:MM:SSZ)") from None
    return text


def usable_pattern(pattern: str) -> bool:
    """Whether a server's ``pattern`` is a regex Python can use (else it is not checked)."""
    try:
        re.compile(pattern)
    except (re.error, RecursionError, OverflowError):
        return False
    return True


def _check_number(value: float, prop: Mapping[str, Any]) -> None:
    low, high = prop.get("minimum"), prop.get("maximum")
    if isinstance(low, (int, float)) and value < low:
        raise ValueError(f"at least {low}")
    if isinstance(high, (int, float)) and value > high:
        raise ValueError(f"at most {high}")


def _pick(text: str, options: list[Choice]) -> Any:
    text = text.strip()
    if text.isdigit() and 1 <= int(text) <= len(options):
        return options[int(text) - 1].value
    for option in options:
        if text in (str(option.value), option.label):
            return option.value
    raise ValueError(f"choose 1-{len(options)} or one of: {', '.join(o.label for o in options)}")


def parse_field(text: str, prop: Mapping[str, Any]) -> Any:
    """The value a person (or a ``KEY.field=value`` flag) typed for one field.

    Raises:
        ValueError: the text does not fit; the message says what would.
    """
    kind = field_kind(prop)
    if kind == "enum":
        return _pick(text, choices(prop) or [])
    if kind == "multi":
        options = choices(prop["items"]) or []
        picked = [_pick(part, options) for part in text.split(",") if part.strip()]
        _check_items(picked, prop)
        return picked
    if kind == "boolean":
        if text.strip().lower() in _TRUE:
            return True
        if text.strip().lower() in _FALSE:
            return False
        raise ValueError("answer y or n")
    if kind in ("integer", "number"):
        try:
            number: float = int(text) if kind == "integer" else float(text)
        except ValueError:
            raise ValueError(f"not {'an integer' if kind == 'integer' else 'a number'}") from None
        if not math.isfinite(number):
            raise ValueError("not a finite number")
        _check_number(number, prop)
        return number
    return _check_string(text, prop)


def _check_items(picked: list[Any], prop: Mapping[str, Any]) -> None:
    low, high = prop.get("minItems"), prop.get("maxItems")
    if isinstance(low, int) and len(picked) < low:
        raise ValueError(f"choose at least {low}")
    if isinstance(high, int) and len(picked) > high:
        raise ValueError(f"choose at most {high}")


def _check_typed_number(value: Any, kind: str, prop: Mapping[str, Any]) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"expected {kind}")
    if kind == "integer" and not float(value).is_integer():
        raise ValueError("expected an integer")
    _check_number(value, prop)


def check_value(value: Any, prop: Mapping[str, Any]) -> None:
    """Check an already-typed value (from JSON) against its field.

    Raises:
        ValueError: it does not fit.
    """
    kind = field_kind(prop)
    if kind == "enum" and value not in [c.value for c in choices(prop) or []]:
        raise ValueError(f"{value!r} is not one of the choices")
    if kind == "multi":
        allowed = [c.value for c in choices(prop["items"]) or []]
        if not isinstance(value, list) or any(v not in allowed for v in value):
            raise ValueError("not a list of the allowed choices")
        _check_items(value, prop)
    elif kind == "boolean":
        if not isinstance(value, bool):
            raise ValueError("expected true or false")
    elif kind in ("integer", "number"):
        _check_typed_number(value, kind, prop)
    elif kind == "string":
        if not isinstance(value, str):
            raise ValueError("expected a string")
        _check_string(value, prop)


def check_content(content: Mapping[str, Any], schema: Mapping[str, Any]) -> list[str]:
    """What is wrong with a form's content (empty when it fits the requested schema)."""
    properties = schema.get("properties") or {}
    problems = [f"{name}: required" for name in schema.get("required") or [] if name not in content]
    for name, value in content.items():
        prop = properties.get(name)
        if not isinstance(prop, dict):
            problems.append(f"{name}: not a field of this form")
            continue
        try:
            check_value(value, prop)
        except ValueError as exc:
            problems.append(f"{name}: {exc}")
    return problems


def defaults(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The form's content made of its fields' defaults."""
    properties = schema.get("properties") or {}
    return {
        name: prop["default"]
        for name, prop in properties.items()
        if isinstance(prop, dict) and "default" in prop
    }
