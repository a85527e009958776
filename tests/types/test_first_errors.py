"""`first_errors`: the first few errors of a validation, whatever their kind."""

from __future__ import annotations

from typing import Annotated

import pytest
from pydantic import AfterValidator, TypeAdapter, ValidationError

from mrtr.types._validation import first_errors


def _odd(value: int) -> int:
    if value % 2 == 0:
        raise ValueError(f"{value} is even")
    return value


@pytest.mark.parametrize("count", [2, 500])
def test_the_first_errors_are_the_ones_errors_gives(count: int) -> None:
    adapter = TypeAdapter(list[Annotated[int, AfterValidator(_odd)]])
    with pytest.raises(ValidationError) as raised:
        adapter.validate_python([*range(0, 2 * count, 2), "x"])
    exc = raised.value
    expected = exc.errors(include_url=False, include_input=False)[:3]
    found = first_errors(exc, 3)
    assert [(list(e["loc"]), e["msg"]) for e in found] == [
        (list(e["loc"]), e["msg"]) for e in expected
    ]
    assert all("input" not in e for e in found)
