"""examples/oauth_login.py runs end to end: an mrtr client logs in to an mrtr server."""

from __future__ import annotations

import subprocess
import sys

from tests.auth.conftest import ROOT


def test_oauth_login_example_logs_in_then_reuses_the_stored_tokens() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "oauth_login.py")],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    first, second = done.stdout.splitlines()
    assert first.startswith("signed in as ")
    assert second == f"{first} (stored tokens, no new login)"
