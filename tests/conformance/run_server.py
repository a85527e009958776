"""Run the official MCP conformance suite in server mode against mrtr's server.

Usage (the `conformance` nox session does this)::

    python tests/conformance/run_server.py --suite-bin <prefix>/node_modules/.bin \
        --server "<python> tests/conformance/server.py"

Like run.py (whose isolation and verdict helpers it shares), it first re-runs itself in
a fresh network namespace whose only interface is the loopback. For each spec version
it starts the server command, which must print the URL it listens on (``http://127.0.0.1
:<port>/...``) as its first line of stdout, runs ``conformance server --suite all``
against that URL with an output directory (and once more without ``--spec-version``:
the bare leg, the only one that reaches the extension scenarios such as ``tasks-*``),
judges every scenario from its ``checks.json`` (at least one SUCCESS, no FAILURE or
WARNING) and stops the server. A
scenario that fails and is not listed runs once more alone; a pass alone counts but is
reported as FLAKY. The result is compared with ``expected-failures-server.txt``, where
every line names a scenario and, after ``#``, why this server fails it: an unexpected
failure fails the run, and so does a listed scenario that passes.

Exit status: 0 when everything matched the expectations, 1 otherwise, 2 on a usage or
environment error.
"""

from __future__ import annotations

import argparse
import os
import re
import selectors
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

try:  # the sibling runner: isolation, the suite's CLI, verdicts
    from tests.conformance import run
except ImportError:  # run as a script: its directory is on sys.path
    import run  # type: ignore[no-redef,import-not-found]

HERE = Path(__file__).resolve().parent
DEFAULT_EXPECTED = HERE / "expected-failures-server.txt"
# the spec versions the server scenarios run at, and the bare leg ("all": no
# --spec-version), the only one that reaches the extension scenarios (tasks-*, SEP-2663)
BARE = "all"
SERVER_VERSIONS = ("2026-07-28", "2025-11-25", BARE)
SERVER_PREFIX = "server-"
LOCAL_URL = re.compile(r"^http://127\.0\.0\.1:\d+/\S*$")
MAX_RERUNS = 4
START_TIMEOUT = 60.0


class ServerProcess:
    """The server under test: started, its URL read, stopped with its process group."""

    def __init__(self, command: str, log: Path) -> None:
        self.command = command
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> str:
        """Start the server and return the URL it printed; raises RuntimeError if none."""
        with self.log.open("wb") as err:
            self.proc = subprocess.Popen(
                shlex.split(self.command),
                stdout=subprocess.PIPE,
                stderr=err,
                start_new_session=True,
            )
        assert self.proc.stdout is not None
        line = b""
        with selectors.DefaultSelector() as sel:
            sel.register(self.proc.stdout, selectors.EVENT_READ)
            deadline = time.monotonic() + START_TIMEOUT
            while not line.endswith(b"\n") and time.monotonic() < deadline:
                if not sel.select(timeout=max(0.0, deadline - time.monotonic())):
                    break
                chunk = os.read(self.proc.stdout.fileno(), 1)
                if not chunk:
                    break
                line += chunk
        url = line.decode(errors="replace").strip()
        if not LOCAL_URL.match(url):
            self.stop()
            tail = self.log.read_text(errors="replace").strip().splitlines()[-5:]
            raise RuntimeError(
                f"the server printed {url!r}, not an http://127.0.0.1 URL; stderr: "
                + " | ".join(tail)
            )
        return url

    def stop(self) -> int | None:
        """Stop the server (SIGTERM, then SIGKILL); returns its exit code."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        return self.proc.returncode


def _version_args(version: str) -> list[str]:
    """The suite's version filter for a leg (none for the bare leg)."""
    return [] if version == BARE else ["--spec-version", version]


def server_scenarios(suite: run.Suite, version: str) -> list[str]:
    out = subprocess.run(
        suite.command("list", "--server", *_version_args(version)),
        capture_output=True,
        text=True,
        env=suite._env(),
        timeout=120,
        check=True,
    ).stdout
    return [m.group(1) for line in out.splitlines() if (m := run.LIST_LINE.match(line))]


def collect(out_dir: Path, names: list[str], output: str) -> list[run.ScenarioResult]:
    """Judge each scenario from the checks.json the suite wrote for it."""
    summary = {
        m.group(2): m.group(1) == "\u2713"
        for m in map(run.SUMMARY_LINE.match, output.splitlines())
        if m
    }
    found = {
        name.removeprefix(SERVER_PREFIX): checks
        for name, checks in run._read_checks(out_dir).items()
    }
    results = []
    for name in names:
        result = run._judge(name, found.get(name), "")
        if name in summary and not summary[name] and result.passed:
            result = run.ScenarioResult(name, False, ["the suite's summary marks it failed"])
        results.append(result)
    return results


def run_version(suite: run.Suite, url: str, version: str, work: Path) -> list[run.ScenarioResult]:
    """Run every server scenario of one spec version against the server at ``url``."""
    names = server_scenarios(suite, version)
    out_dir = work / f"server-suite-{version}"
    out_dir.mkdir(parents=True)
    args = ["server", "--url", url, "--suite", "all", *_version_args(version)]
    args += ["--timeout", str(suite.timeout_ms), "-o", str(out_dir)]
    code, output = suite.run(args, work / f"server-suite-{version}.log")
    if code is None:
        print(f"conformance: server suite for {version} ran past {suite.budget_s:.0f}s")
    return collect(out_dir, names, output)


def rerun_alone(
    suite: run.Suite, url: str, result: run.ScenarioResult, version: str, work: Path
) -> run.ScenarioResult:
    """Run a failed scenario once more alone (its time-bounded reads can lose to load)."""
    out_dir = work / f"server-rerun-{version}-{result.name}"
    out_dir.mkdir(parents=True)
    args = ["server", "--url", url, "--scenario", result.name, *_version_args(version)]
    args += ["--timeout", str(suite.timeout_ms), "-o", str(out_dir)]
    _, output = suite.run(args, out_dir.with_suffix(".log"))
    alone = collect(out_dir, [result.name], output)[0]
    if not alone.passed:
        return result
    return run.ScenarioResult(result.name, True, result.reasons, flaky=True)


def read_expected(path: Path) -> set[str]:
    """Scenario names, each line ``name  # reason``; a line without a reason is an error."""
    names = set()
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        name, _, reason = raw.partition("#")
        if not name.strip():
            continue
        if not reason.strip():
            raise ValueError(f"{path.name}:{number}: {name.strip()} lists no reason")
        names.add(name.strip())
    return names


def _parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite-bin", type=Path, required=True)
    parser.add_argument("--server", required=True, help="command that serves and prints its URL")
    parser.add_argument("--spec-version", action="append", dest="versions")
    parser.add_argument("--expected", type=Path, default=DEFAULT_EXPECTED)
    parser.add_argument("--timeout-ms", type=int, default=30000, help="per scenario")
    parser.add_argument("--budget", type=float, default=600.0, help="seconds per suite run")
    parser.add_argument("--no-rerun", dest="rerun", action="store_false")
    parser.add_argument("--keep", type=Path, help="keep the suite's outputs in this directory")
    return parser.parse_args(argv)


def _run_versions(
    args: argparse.Namespace, suite: run.Suite, expected: set[str], work: Path
) -> dict[str, list[run.ScenarioResult]]:
    results: dict[str, list[run.ScenarioResult]] = {}
    reruns_left = MAX_RERUNS if args.rerun else 0
    for version in args.versions or SERVER_VERSIONS:
        started = time.monotonic()
        server = ServerProcess(args.server, work / f"server-{version}.stderr")
        url = server.start()
        try:
            results[version] = []
            for res in run_version(suite, url, version, work):
                if not res.passed and res.name not in expected and reruns_left > 0:
                    reruns_left -= 1
                    res = rerun_alone(suite, url, res, version, work)
                results[version].append(res)
        finally:
            server.stop()
        print(f"conformance: server suite {version} took {time.monotonic() - started:.0f}s")
    return results


def _main_isolated(args: argparse.Namespace) -> int:
    problem = run._check_isolation() or run._node_problem(args.suite_bin.resolve())
    if problem:
        print(f"conformance: {problem}")
        return 2
    try:
        expected = read_expected(args.expected)
    except ValueError as exc:
        print(f"conformance: {exc}")
        return 2
    suite = run.Suite(args.suite_bin.resolve(), "", args.timeout_ms, args.budget)
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="mrtr-conformance-server-", dir=args.keep))
    print(f"conformance: server-mode outputs in {work}")
    try:
        results = _run_versions(args, suite, expected, work)
    except RuntimeError as exc:
        print(f"conformance: {exc}")
        return 1
    problems, lines = run.compare(results, expected, complete=args.versions is None)
    print("\n".join(lines))
    counts = ", ".join(
        f"{version}: {sum(r.passed for r in items)}/{len(items)} pass"
        for version, items in results.items()
    )
    print(f"conformance: server mode {counts}")
    if problems:
        print("conformance: server mode FAILED")
        print("\n".join(f"  - {p}" for p in problems))
        for log in sorted(work.glob("server-*.stderr")):
            tail = log.read_text(errors="replace").strip().splitlines()[-15:]
            if tail:
                print(f"== {log.name} (last lines)")
                print("\n".join("      " + line for line in tail))
        return 1
    print("conformance: OK, server results match expected-failures-server.txt")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = _parse_args(argv)
    if os.environ.get(run.NETNS_MARK) != "1":
        return _enter_isolated_namespace(argv)
    return _main_isolated(args)


def _enter_isolated_namespace(argv: list[str]) -> int:
    """Re-run this script (not run.py) inside a new loopback-only network namespace."""
    unshare = shutil.which("unshare")
    if unshare is None:
        print("conformance: `unshare` (util-linux) is required to isolate the suite")
        return 2
    flags = ["-n"] if os.geteuid() == 0 else ["-r", "-n"]
    env = {**os.environ, run.NETNS_MARK: "1"}
    cmd = [unshare, *flags, sys.executable, str(Path(__file__).resolve()), *argv]
    return subprocess.call(cmd, env=env)


if __name__ == "__main__":
    sys.exit(main())
