"""mrtr.auth is loaded only when used."""

from __future__ import annotations

import subprocess
import sys


def test_importing_the_client_does_not_load_mrtr_auth() -> None:
    probe = (
        "import sys\n"
        "from mrtr import Client, AuthError, AuthorizationRequiredError\n"
        "import mrtr.transports.http\n"
        "names = [m for m in sys.modules if m.startswith('mrtr.auth') or m == 'cryptography']\n"
        "print(sorted(names))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "[]"


def test_importing_mrtr_auth_does_not_load_cryptography() -> None:
    probe = "import sys, mrtr.auth\nprint('cryptography' in sys.modules)\n"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "False"
