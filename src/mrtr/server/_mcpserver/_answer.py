"""An accepted answer checked against the form that was advertised, before it is converted.

The Python type reads an answer in pydantic's lax mode, which would take ``"nan"`` for a
``{"type": "number"}`` field, ``"yes"`` or ``1`` for a boolean and ``"12"`` or ``true``
for an integer: values outside the schema the client was shown. So each field is first
held to that schema: strict JSON types, finite numbers, enum and const membership (typed:
``1`` is not ``true``), the bounds it states and the string formats the elicitation
schema defines (``date``, ``date-time``, ``email``, ``uri``). Constraints the type
enforces itself (a ``pattern``, ``multipleOf``, a ``uuid``) are left to the type.
"""

from __future__ import annotations

import datetime
import math
import re
import sys
from typing import Any, TypeGuard

__all__ = ["problems"]

_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})\Z", re.ASCII)
# RFC 3339's shape, with the seconds and the offset optional: form clients send a local
# "2024-05-01T09:30" (what the type then reads), never a number or free text
_DATE_TIME = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?"
    r"(?:[Zz]|[+-](\d{2}):?(\d{2}))?\Z",
    re.ASCII,
)
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\Z")
_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:\S*\Z")


def problems(schema: dict[str, Any], content: dict[str, Any]) -> dict[str, str]:
    """What in `content` falls outside `schema`, by field (empty when it all fits)."""
    found: dict[str, str] = {}
    properties: dict[str, Any] = schema.get("properties", {})
    for name in schema.get("required", ()):
        if name not in content:
            found[name] = "missing"
    for name, value in content.items():
        prop = properties.get(name)
        if prop is not None:  # other fields: the schema allows them, the type ignores them
            problem = _field(prop, value)
            if problem is not None:
                found[name] = problem
    return found


def _field(prop: dict[str, Any], value: Any) -> str | None:
    kind = prop.get("type")
    if kind == "array":
        return _array(prop, value)
    problem = _typed(kind, value)
    if problem is not None:
        return problem
    choices = _choices(prop)
    if choices is not None and not any(_same(value, choice) for choice in choices):
        return "not one of the choices offered"
    if kind == "string":
        return _string(prop, value)
    if kind in ("number", "integer"):
        return _bounds(prop, value)
    return None


def _typed(kind: Any, value: Any) -> str | None:
    """Whether `value` has the JSON type `kind` (a finite number, never a bool)."""
    if kind == "boolean":
        return None if type(value) is bool else "expected true or false"
    if kind == "string":
        return None if type(value) is str else "expected a string"
    if kind not in ("number", "integer"):
        return None
    if type(value) is int:  # one past a double's range is no finite number either
        if kind == "number" and abs(value) > sys.float_info.max:
            return "expected a finite number"
        return None
    if type(value) is not float or not math.isfinite(value):
        return "expected a finite number" if kind == "number" else "expected an integer"
    if kind == "integer" and not value.is_integer():
        return "expected an integer"
    return None


def _choices(prop: dict[str, Any]) -> list[Any] | None:
    """The values `prop` allows (``enum``, ``const``, or titled ``oneOf`` consts)."""
    if "enum" in prop:
        return list(prop["enum"])
    if "const" in prop:
        return [prop["const"]]
    titled = prop.get("oneOf") or prop.get("anyOf")
    if isinstance(titled, list) and titled and all("const" in arm for arm in titled):
        return [arm["const"] for arm in titled]
    return None


def _same(value: Any, choice: Any) -> bool:
    """JSON equality: ``1`` equals ``1.0`` but never ``true``."""
    if isinstance(value, bool) or isinstance(choice, bool):
        return type(value) is type(choice) and value == choice
    return bool(value == choice)


def _string(prop: dict[str, Any], value: str) -> str | None:
    low, high = prop.get("minLength"), prop.get("maxLength")
    if isinstance(low, int) and len(value) < low:
        return f"shorter than {low} characters"
    if isinstance(high, int) and len(value) > high:
        return f"longer than {high} characters"
    fmt = prop.get("format")
    if fmt == "date" and not _valid_date(value):
        return "expected a date (YYYY-MM-DD)"
    if fmt == "date-time" and not _valid_date_time(value):
        return "expected a date-time (YYYY-MM-DDThh:mm[:ss], an offset optional)"
    if fmt == "email" and _EMAIL.match(value) is None:
        return "expected an email address"
    if fmt == "uri" and _URI.match(value) is None:
        return "expected an absolute URI"
    return None


def _valid_date(value: str) -> bool:
    match = _DATE.match(value)
    return match is not None and _calendar(*match.groups())


def _valid_date_time(value: str) -> bool:
    match = _DATE_TIME.match(value)
    if match is None:
        return False
    year, month, day, hour, minute, second, off_hour, off_minute = match.groups()
    if int(hour) > 23 or int(minute) > 59 or int(second or 0) > 60:  # 60: a leap second
        return False
    if off_hour is not None and (int(off_hour) > 23 or int(off_minute) > 59):
        return False
    return _calendar(year, month, day)


def _calendar(year: str, month: str, day: str) -> bool:
    try:
        datetime.date(int(year), int(month), int(day))
    except ValueError:
        return False
    return True


def _bounds(prop: dict[str, Any], value: float) -> str | None:
    low, high = prop.get("minimum"), prop.get("maximum")
    above, below = prop.get("exclusiveMinimum"), prop.get("exclusiveMaximum")
    if _number(low) and value < low:
        return f"less than {low}"
    if _number(high) and value > high:
        return f"more than {high}"
    if _number(above) and value <= above:
        return f"not more than {above}"
    if _number(below) and value >= below:
        return f"not less than {below}"
    return None


def _number(bound: Any) -> TypeGuard[float]:
    return type(bound) in (int, float)


def _array(prop: dict[str, Any], value: Any) -> str | None:
    if type(value) is not list:
        return "expected a list"
    items = prop.get("items")
    choices = _choices(items) if isinstance(items, dict) else None
    for item in value:
        if type(item) is not str:
            return "expected a list of strings"
        if choices is not None and item not in choices:
            return "not one of the choices offered"
    low, high = prop.get("minItems"), prop.get("maxItems")
    if isinstance(low, int) and len(value) < low:
        return f"fewer than {low} choices"
    if isinstance(high, int) and len(value) > high:
        return f"more than {high} choices"
    if prop.get("uniqueItems") is True and len(set(value)) != len(value):
        return "a choice appears twice"
    return None
