"""Importing the client must not build the wire models: `import mrtr` stays cheap."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

_PROBE = """
import json, sys
{statement}
loaded = sorted(
    name for name in sys.modules
    if name.startswith("mrtr.types._") and name != "mrtr.types._constants"
)
print(json.dumps({{"models": loaded, "pydantic": "pydantic" in sys.modules}}))
"""


def _probe(statement: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE.format(statement=statement)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


@pytest.mark.parametrize(
    "statement",
    [
        "from mrtr import Client",
        "import mrtr.client, mrtr.session, mrtr._driver, mrtr.transports",
        "from mrtr.types import LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS",
    ],
)
def test_client_import_loads_no_model_module(statement: str) -> None:
    assert _probe(statement) == {"models": [], "pydantic": False}


def test_model_names_still_resolve_lazily() -> None:
    result = _probe("from mrtr.types import InputRequiredResult, parse_result")
    assert "mrtr.types._input" in result["models"]
    assert result["pydantic"] is True


def test_star_import_and_dir_list_every_public_name() -> None:
    import mrtr.types

    namespace: dict[str, object] = {}
    exec("from mrtr.types import *", namespace)
    assert set(mrtr.types.__all__) <= set(namespace)
    assert set(mrtr.types.__all__) <= set(dir(mrtr.types))
    with pytest.raises(AttributeError):
        _ = mrtr.types.NoSuchName  # type: ignore[attr-defined]
