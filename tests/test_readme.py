"""The README's usage example runs as written."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def python_blocks() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)


def test_the_first_usage_example_runs() -> None:
    example = python_blocks()[0]
    assert "anyio.run(main)" in example  # a complete program, not a fragment
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(
        [sys.executable, "-c", example],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Provisioned 'orders' in eu-west-1."


def test_every_python_block_compiles() -> None:
    for block in python_blocks():
        compile(block, "README.md", "exec", flags=0x2000)  # PyCF_ALLOW_TOP_LEVEL_AWAIT
