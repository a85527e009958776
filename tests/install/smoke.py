"""What a user runs after `pip install 'mrtr[server]'`, run by that install's Python.

`nox -s install` builds the wheel, installs it into a fresh venv with nothing but the
package and one extra (no test group: no trio, no mcp, no sniffio), and runs this file
with that venv's interpreter from a directory outside the checkout:

    python smoke.py server CHECKOUT   # the demo, the README's examples, the CLI, stdio, HTTP
    python smoke.py core CHECKOUT     # `pip install mrtr`: the client, and clear extra errors

It needs only the standard library and mrtr, and it checks outputs, not just exit codes.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

PYTHON = sys.executable
BIN = Path(PYTHON).parent
MRTR = str(BIN / "mrtr")
RESULT = "Provisioned 'orders' in eu-west-1."
TIMEOUT = 120  # generous: a slow 2-core machine, a cold interpreter


def run(*argv: str, expect_code: int = 0) -> str:
    """Run a command with the venv first on PATH; its stdout, after checking its exit code."""
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("PYTHONPATH", None)  # nothing from a checkout or a test environment
    done = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT, env=env)
    if done.returncode != expect_code:
        raise AssertionError(
            f"{' '.join(argv)}: exit {done.returncode}, wanted {expect_code}\n"
            f"stdout: {done.stdout[-2000:]}\nstderr: {done.stderr[-4000:]}"
        )
    return done.stdout + ("" if expect_code == 0 else done.stderr)


def check(name: str, fn: Callable[[], None]) -> None:
    fn()
    print(f"ok   {name}", flush=True)


def readme_blocks(checkout: Path) -> list[tuple[str, str]]:
    """The README's Python blocks marked to run, with the output each must print."""
    text = (checkout / "README.md").read_text(encoding="utf-8")
    pattern = r'<!-- check: run expect="(.*?)" -->\n```python\n(.*?)```'
    return [(expect, code) for expect, code in re.findall(pattern, text, flags=re.DOTALL)]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def http_server(script: str) -> Iterator[str]:
    """``python SCRIPT --http PORT`` on 127.0.0.1; its URL once it accepts, stopped after."""
    port = free_port()
    proc = subprocess.Popen(
        [PYTHON, script, "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + TIMEOUT
        while True:  # readiness: the port accepts (bounded; the server may be cold)
            if proc.poll() is not None:
                raise AssertionError(f"{script} exited {proc.returncode}: {proc.stderr.read()}")  # type: ignore[union-attr]
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise AssertionError(f"{script} never listened on {port}") from None
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def server_checks(checkout: Path) -> None:
    shutil.copytree(checkout / "examples", "examples")

    def demo() -> None:
        out = run(PYTHON, "-m", "mrtr", "demo")
        assert f"result: {RESULT}" in out, out
        assert "round 1: asked [region (elicitation/create)]" in out, out

    def cli_help() -> None:
        out = run(MRTR, "--help")
        assert re.search(r"^ +call +call a tool, answering every input request$", out, re.M), out
        import mrtr

        assert run(MRTR, "--version").strip() == f"mrtr {mrtr.__version__}"

    def readme() -> None:
        blocks = readme_blocks(checkout)
        assert len(blocks) >= 2, "the README's runnable examples were not found"
        for expect, code in blocks:
            assert run(PYTHON, "-c", code).strip() == expect

    def mcpserver_stdio() -> None:  # MCPServer.run() over stdio, through the CLI
        server = [PYTHON, "examples/mcpserver_provision.py"]
        listed = run(MRTR, "list", "--", *server)
        assert "provision(name: str)" in listed, listed
        answers = ["--answer", "ask_region=eu-west-1", "--answer", "ask_confirm=yes"]
        out = run(MRTR, "call", "provision", "name=orders", *answers, "--", *server)
        assert out.strip() == RESULT, out

    def lowlevel_stdio() -> None:  # Server.run_stdio(), the JSON transcript
        server = [PYTHON, "examples/server_provision.py"]
        out = run(MRTR, "call", "provision", "name=orders", "--answer", "region=eu-west-1",
                  "--json", "--", *server)  # fmt: skip
        transcript = json.loads(out)
        assert transcript["status"] == "complete", transcript
        assert transcript["result"]["content"][0]["text"] == RESULT
        assert [r["keys"] for r in transcript["rounds"]] == [["region"]]

    def http() -> None:  # both servers over streamable HTTP: the CLI and the README's client
        with http_server("examples/mcpserver_provision.py") as url:
            answers = ["--answer", "ask_region=eu-west-1", "--answer", "ask_confirm=yes"]
            out = run(MRTR, "call", url, "provision", "name=orders", *answers)
            assert out.strip() == RESULT, out
        with http_server("examples/server_provision.py") as url:
            expect, client = readme_blocks(checkout)[0]
            stdio = 'StdioServerParameters("python3", ["examples/server_provision.py"])'
            assert stdio in client, "the README's first example changed: update this check"
            assert run(PYTHON, "-c", client.replace(stdio, repr(url))).strip() == expect

    def extras_named() -> None:
        probe = (
            "import mrtr.server, mrtr.auth\n"
            "from mrtr.server import RedisEventStore\n"
            "try:\n"
            "    import redis\n"
            "except ImportError:\n"
            "    print('no redis')\n"
        )
        assert run(PYTHON, "-c", probe).strip() == "no redis"  # the extra brings no more

    for name, fn in [
        ("python -m mrtr demo", demo),
        ("mrtr --help, --version", cli_help),
        ("the README's runnable examples (stdio, in process)", readme),
        ("MCPServer.run() over stdio: mrtr list, mrtr call", mcpserver_stdio),
        ("Server.run_stdio(): mrtr call --json", lowlevel_stdio),
        ("streamable HTTP: mrtr call, the README's client", http),
        ("nothing beyond the extra", extras_named),
    ]:
        check(name, fn)


def core_checks(checkout: Path) -> None:
    def client_imports() -> None:
        probe = "import mrtr, mrtr.auth, mrtr.client, mrtr.types; print(mrtr.Client.__name__)"
        assert run(PYTHON, "-c", probe).strip() == "Client"

    def server_names_extra() -> None:
        err = run(PYTHON, "-c", "import mrtr.server", expect_code=1)
        assert "pip install 'mrtr[server]'" in err, err

    def demo_names_extra() -> None:
        err = run(MRTR, "demo", expect_code=2)
        assert "pip install 'mrtr[server]'" in err, err

    def auth_names_extra() -> None:  # private_key_jwt signs with cryptography: mrtr[auth]
        probe = (
            "from mrtr.auth import SigningKey\n"
            "try:\n"
            "    SigningKey(pem=b'-').sign({})\n"
            "except ImportError as exc:\n"
            "    print(exc)\n"
        )
        assert "pip install 'mrtr[auth]'" in run(PYTHON, "-c", probe)

    def trio_names_extra() -> None:
        err = run(MRTR, "list", "--backend", "trio", "--", PYTHON, "server.py", expect_code=2)
        assert "pip install 'mrtr[trio]'" in err, err

    for name, fn in [
        ("import mrtr, mrtr.auth, mrtr.client without an extra", client_imports),
        ("import mrtr.server names mrtr[server]", server_names_extra),
        ("mrtr demo names mrtr[server]", demo_names_extra),
        ("a JWT signer names mrtr[auth]", auth_names_extra),
        ("--backend trio names mrtr[trio]", trio_names_extra),
    ]:
        check(name, fn)


def main(argv: list[str]) -> int:
    kind, checkout = argv[0], Path(argv[1]).resolve()
    if Path.cwd().resolve().is_relative_to(checkout):
        raise SystemExit("run this from a directory outside the checkout")
    import mrtr

    where = Path(mrtr.__file__).resolve()
    assert not where.is_relative_to(checkout), f"mrtr imported from the checkout: {where}"
    {"server": server_checks, "core": core_checks}[kind](checkout)
    print(f"{kind}: every check passed on Python {sys.version.split()[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
