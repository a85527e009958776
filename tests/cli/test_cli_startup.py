"""``mrtr --help`` and ``mrtr servers`` load no client, pydantic, httpx or event loop."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

_PROBE = """
import contextlib, io, json, sys
from mrtr.cli import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    code = main({argv!r})
heavy = ("pydantic", "httpx", "anyio", "mrtr.client", "mrtr.session", "mrtr.types._tools")
print(json.dumps({{"code": code, "loaded": sorted(m for m in heavy if m in sys.modules)}}))
"""


@pytest.mark.parametrize(
    "argv", [["--help"], ["call", "--help"], ["servers", "--no-discover"], ["nope"]]
)
def test_commands_without_a_server_stay_light(argv: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE.format(argv=argv)],
        capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    report = json.loads(done.stdout)
    assert report["loaded"] == []
    assert report["code"] == (2 if argv == ["nope"] else 0)
