"""Every code block of the README and the guides runs as written, or is type-checked.

How a block is checked is written above it (see `blocks`). Programs run from the
repository's root against the example servers: over stdio, or over HTTP on a free
127.0.0.1 port that the test starts and stops.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.docs.blocks import ROOT, Block, blocks

BOUND = 120  # seconds for one program: generous, never a timing claim
ALL = blocks()
RUN = [b for b in ALL if b.check == "run"]
SH = [b for b in ALL if b.check == "sh"]
TYPECHECK = [b for b in ALL if b.check == "typecheck"]


def _env() -> dict[str, str]:
    bin_dir = str(Path(sys.executable).parent)
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}


def test_every_block_says_how_it_is_checked() -> None:
    assert len(ALL) > 20  # the pages were found
    unmarked = [b.id for b in ALL if b.check not in ("run", "sh", "typecheck", "none")]
    assert unmarked == [], "a block without <!-- check: ... --> above it"
    python_unchecked = [b.id for b in ALL if b.lang == "python" and b.check == "none"]
    assert python_unchecked == [], "a Python block must run or be type-checked"
    for block in RUN + SH:
        assert block.options.get("expect"), f"{block.id}: say what it prints (expect=...)"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def _http_server(script: str) -> Iterator[int]:
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, script, "--http", str(port)],
        cwd=ROOT,
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + BOUND
        while True:
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, f"{script} did not listen on {port}"
                time.sleep(0.05)  # polling a real process that is starting, not a timing
        yield port
    finally:
        process.terminate()
        process.wait(timeout=BOUND)
        if process.stderr is not None:
            process.stderr.close()


@pytest.mark.parametrize("block", RUN, ids=[b.id for b in RUN])
def test_the_program_runs(block: Block, tmp_path: Path) -> None:
    program = tmp_path / "program.py"
    with _maybe_server(block.options.get("server")) as port:
        code = block.body
        if port is not None:
            assert "127.0.0.1:8000" in code, f"{block.id}: a server= block talks to 127.0.0.1:8000"
            code = code.replace("127.0.0.1:8000", f"127.0.0.1:{port}")
        program.write_text(code, encoding="utf-8")
        done = subprocess.run(
            [sys.executable, str(program)],
            cwd=ROOT,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=BOUND,
        )
    assert done.returncode == 0, f"{block.id}\n{done.stdout}\n{done.stderr}"
    assert block.options["expect"] in done.stdout, f"{block.id}\n{done.stdout}"


@contextmanager
def _maybe_server(script: str | None) -> Iterator[int | None]:
    if script is None:
        yield None
        return
    with _http_server(script) as port:
        yield port


@pytest.mark.parametrize("block", SH, ids=[b.id for b in SH])
def test_the_shell_lines_run(block: Block, tmp_path: Path) -> None:
    done = subprocess.run(
        ["bash", "-e", "-c", block.body],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=BOUND,
    )
    assert done.returncode == 0, f"{block.id}\n{done.stdout}\n{done.stderr}"
    assert block.options["expect"] in done.stdout, f"{block.id}\n{done.stdout}"


def test_the_fragments_type_check(tmp_path: Path) -> None:
    assert TYPECHECK, "no block to type-check: drop this test or the marker"
    files = []
    for number, block in enumerate(TYPECHECK):
        path = tmp_path / f"block_{number}.py"
        path.write_text(f"# {block.id}\n{block.body}", encoding="utf-8")
        files.append(str(path))
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--python-version",
         "3.10", "--follow-imports", "silent", *files],
        cwd=ROOT,
        env={**_env(), "MYPYPATH": str(ROOT / "src")},
        capture_output=True,
        text=True,
        timeout=BOUND * 2,
    )  # fmt: skip
    names = {f"block_{n}.py": b.id for n, b in enumerate(TYPECHECK)}
    report = done.stdout
    for file, where in names.items():
        report = report.replace(str(tmp_path / file), where)
    assert done.returncode == 0, report
