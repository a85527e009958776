"""The server half stays out of `import mrtr`, and its heavy dependencies load lazily."""

from __future__ import annotations

import subprocess
import sys


def _modules_after(code: str) -> set[str]:
    script = f"{code}\nimport sys\nprint('\\n'.join(sys.modules))"
    output = subprocess.run(
        [sys.executable, "-c", script], check=True, capture_output=True, text=True
    )
    return set(output.stdout.split())


def test_import_mrtr_does_not_import_the_server() -> None:
    loaded = _modules_after("import mrtr; mrtr.Client")
    assert not {m for m in loaded if m.startswith("mrtr.server")}


def test_server_imports_crypto_and_uvicorn_lazily() -> None:
    loaded = _modules_after(
        "from mrtr.server import Server, RequestStateSecurity\n"
        "Server('s', request_state_security=RequestStateSecurity(keys=[b'k' * 32]))\n"
        "Server('t').streamable_http_app()"
    )
    assert not {m for m in loaded if m.split(".")[0] in {"cryptography", "uvicorn", "starlette"}}
