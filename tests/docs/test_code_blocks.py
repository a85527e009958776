"""Every code block of the README and the guides runs as written, or is type-checked.

How a block is checked is written above it (see `blocks`). Programs run from the
repository's root against the example servers: over stdio, or over HTTP on a free
127.0.0.1 port that the test starts and stops.
"""

from __future__ import annotations

import contextlib
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
from tests.helpers.redis_server import redis_server

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


def _wait_for_port(port: int, process: subprocess.Popen[bytes], name: str) -> None:
    deadline = time.monotonic() + BOUND
    while True:
        assert process.poll() is None, f"{name} exited with {process.returncode}"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            assert time.monotonic() < deadline, f"{name} did not listen on {port}"
            time.sleep(0.05)  # polling a real process that is starting, not a timing


@contextmanager
def _http_server(script: str) -> Iterator[int]:
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, script, "--http", str(port)],
        cwd=ROOT,
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_for_port(port, process, script)
        yield port
    finally:
        process.terminate()
        process.wait(timeout=BOUND)


@pytest.mark.parametrize("block", RUN, ids=[b.id for b in RUN])
def test_the_program_runs(block: Block, tmp_path: Path) -> None:
    program = tmp_path / "program.py"
    with contextlib.ExitStack() as services:
        code = block.body
        if block.options.get("server"):
            port = services.enter_context(_http_server(block.options["server"]))
            assert "127.0.0.1:8000" in code, f"{block.id}: a server= block talks to 127.0.0.1:8000"
            code = code.replace("127.0.0.1:8000", f"127.0.0.1:{port}")
        if block.options.get("redis"):
            port = services.enter_context(redis_server(needed_by="the Redis examples"))
            assert "port=6379" in code, f"{block.id}: a redis= block talks to port=6379"
            code = code.replace("port=6379", f"port={port}")
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
