"""Run the official MCP conformance suite against mrtr's client and check the results.

Usage (the `conformance` nox session does this)::

    python tests/conformance/run.py --suite-bin <prefix>/node_modules/.bin \
        --client "<python> tests/conformance/client.py"

The suite's mock servers listen on every interface, so this script first re-runs itself
inside a fresh network namespace (`unshare -n`; `unshare -rn` when not root) whose only
interface is the loopback, brings `lo` up with an ioctl (no `ip` binary needed) and
refuses to go on if any other interface is visible.

For each spec version it runs `conformance client --suite all` with an output directory
(the pseudo-version `all` runs the bare suite: every scenario, back-compat and extension
ones included, each at the version the suite picks for it),
reads every scenario's `checks.json` and decides pass/fail itself: a scenario passes when
it has at least one SUCCESS check and no FAILURE or WARNING (the suite's own summary
counts a scenario with no checks at all as passed; we do not). The result is compared
with `expected-failures.txt`: an unexpected failure fails the run, and so does a listed
scenario that passes (the file must stay honest). A scenario that fails in the parallel
suite and is not listed runs once more alone: a pass alone counts but is reported as
FLAKY with the reasons it failed under load (timing checks on a small shared machine).
Then each scenario named with
`--single` runs alone with `--scenario`, where the suite also judges the client's exit
code: it must exit 0 unless the scenario is listed as an expected failure.

Exit status: 0 when everything matched the expectations, 1 otherwise, 2 on a usage or
environment error.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import re
import shlex
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_EXPECTED = HERE / "expected-failures.txt"
BARE = "all"
"""The pseudo spec version of the bare `--suite all` leg (no `--spec-version`)."""
DEFAULT_VERSIONS = ("2026-07-28", "2025-11-25", BARE)
DEFAULT_SINGLE = ("sep-2322-client-request-state@2026-07-28",)
NETNS_MARK = "MRTR_CONFORMANCE_NETNS"
MAX_RERUNS = 6  # over three legs; more failures than this are not load flakiness
TIMESTAMP_SUFFIX = re.compile(r"-\d{4}-\d{2}-\d{2}T[\d-]+Z$")
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")
LIST_LINE = re.compile(r"^\s+-\s+(\S+)\s+\[")
SUMMARY_LINE = re.compile(r"^([\u2713\u2717])\s+(\S+):\s+\d+ passed")


# --- network isolation ------------------------------------------------------------------


def _bring_loopback_up() -> None:
    """Set IFF_UP on `lo` in the current network namespace (what `ip link set lo up` does)."""
    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sh", b"lo", 0)
        flags = struct.unpack("16sh", fcntl.ioctl(sock, siocgifflags, request))[1]
        fcntl.ioctl(sock, siocsifflags, struct.pack("16sh", b"lo", flags | iff_up))


def _interfaces() -> list[str]:
    return sorted(name for _, name in socket.if_nameindex())


def _enter_isolated_namespace(argv: list[str]) -> int:
    """Re-run this script inside a new network namespace; returns its exit status."""
    unshare = shutil.which("unshare")
    if unshare is None:
        print("conformance: `unshare` (util-linux) is required to isolate the suite's servers")
        return 2
    flags = ["-n"] if os.geteuid() == 0 else ["-r", "-n"]
    env = {**os.environ, NETNS_MARK: "1"}
    cmd = [unshare, *flags, sys.executable, str(Path(__file__).resolve()), *argv]
    return subprocess.call(cmd, env=env)


def _check_isolation() -> str | None:
    _bring_loopback_up()
    names = _interfaces()
    if names != ["lo"]:
        return f"refusing to run: network interfaces other than lo are visible: {names}"
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))  # fails if lo did not come up
    return None


# --- running the suite ------------------------------------------------------------------


@dataclass
class ScenarioResult:
    name: str
    passed: bool
    reasons: list[str] = field(default_factory=list)
    flaky: bool = False


@dataclass
class Suite:
    bin_dir: Path
    client: str
    timeout_ms: int
    budget_s: float

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["PATH"] = f"{self.bin_dir}{os.pathsep}{env.get('PATH', '')}"
        env.setdefault("NO_COLOR", "1")
        return env

    def command(self, *args: str) -> list[str]:
        return [str(self.bin_dir / "conformance"), *args]

    def run(self, args: list[str], log: Path) -> tuple[int | None, str]:
        """Run the suite CLI bounded by the budget; returns (exit code or None, output)."""
        with log.open("w") as out:
            proc = subprocess.Popen(
                self.command(*args),
                stdout=out,
                stderr=subprocess.STDOUT,
                env=self._env(),
                start_new_session=True,
            )
            try:
                code: int | None = proc.wait(timeout=self.budget_s)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                code = None
        return code, log.read_text(errors="replace")

    def scenarios(self, version: str) -> list[str]:
        out = subprocess.run(
            self.command("list", "--client", *_version_args(version)),
            capture_output=True,
            text=True,
            env=self._env(),
            timeout=120,
            check=True,
        ).stdout
        return [m.group(1) for line in out.splitlines() if (m := LIST_LINE.match(line))]


def _read_checks(out_dir: Path) -> dict[str, list[dict[str, object]]]:
    found: dict[str, list[dict[str, object]]] = {}
    for path in out_dir.rglob("checks.json"):
        rel = path.parent.relative_to(out_dir).as_posix()
        name = TIMESTAMP_SUFFIX.sub("", rel)
        try:
            found[name] = json.loads(path.read_text())
        except ValueError as exc:
            found[name] = [{"status": "FAILURE", "name": "checks.json", "errorMessage": str(exc)}]
    return found


def _judge(name: str, checks: list[dict[str, object]] | None, stderr: str) -> ScenarioResult:
    if checks is None:
        return ScenarioResult(name, False, ["no checks.json: the scenario did not run"])
    bad = [c for c in checks if c.get("status") in ("FAILURE", "WARNING")]
    reasons = [
        f"{c.get('status')} {c.get('name')}: {c.get('errorMessage') or c.get('description')}"
        for c in bad
    ]
    if not any(c.get("status") == "SUCCESS" for c in checks):
        reasons.append("no SUCCESS check (the client did nothing the scenario could observe)")
    if reasons and stderr.strip():
        tail = stderr.strip().splitlines()[-3:]
        reasons.append("client stderr: " + " | ".join(line.strip() for line in tail))
    return ScenarioResult(name, not reasons, reasons)


def _collect(out_dir: Path, names: list[str], output: str) -> list[ScenarioResult]:
    summary = {
        m.group(2): m.group(1) == "\u2713"
        for m in map(SUMMARY_LINE.match, output.splitlines())
        if m
    }
    found = _read_checks(out_dir)
    results = []
    for name in names:
        stderr_files = sorted(out_dir.glob(f"{name}-*/stderr.txt"))
        stderr = stderr_files[-1].read_text(errors="replace") if stderr_files else ""
        result = _judge(name, found.get(name), stderr)
        if name in summary and not summary[name] and result.passed:
            result = ScenarioResult(name, False, ["the suite's summary marks it failed"])
        results.append(result)
    return results


def _version_args(version: str) -> list[str]:
    return [] if version == BARE else ["--spec-version", version]


def run_version(suite: Suite, version: str, work: Path) -> list[ScenarioResult]:
    """Run `--suite all` at one spec version and judge every scenario it should hold."""
    names = suite.scenarios(version)
    out_dir = work / f"suite-{version}"
    out_dir.mkdir(parents=True)
    args = ["client", "--command", suite.client, "--suite", "all", *_version_args(version)]
    args += ["--timeout", str(suite.timeout_ms), "-o", str(out_dir)]
    code, output = suite.run(args, work / f"suite-{version}.log")
    if code is None:
        print(f"conformance: suite for {version} ran past {suite.budget_s:.0f}s and was killed")
    return _collect(out_dir, names, output)


def rerun_alone(suite: Suite, result: ScenarioResult, version: str, work: Path) -> ScenarioResult:
    """Run a scenario that failed in the parallel suite once more, alone.

    The suite starts every scenario at once; on a small shared machine a timing check
    (e.g. sse-retry's) can fail from load alone. A pass alone counts, but is reported
    as flaky with the reasons it failed under load.
    """
    out_dir = work / f"rerun-{version}-{result.name.replace('/', '_')}"
    out_dir.mkdir(parents=True)
    args = ["client", "--command", suite.client, "--scenario", result.name]
    args += [*_version_args(version), "--timeout", str(suite.timeout_ms), "-o", str(out_dir)]
    _, output = suite.run(args, out_dir.with_suffix(".log"))
    alone = _collect(out_dir, [result.name], output)[0]
    if not alone.passed:
        return result
    return ScenarioResult(result.name, True, result.reasons, flaky=True)


def run_single(suite: Suite, name: str, version: str, work: Path) -> tuple[int | None, str]:
    args = ["client", "--command", suite.client, "--scenario", name, *_version_args(version)]
    args += ["--timeout", str(suite.timeout_ms)]
    log = work / f"single-{name.replace('/', '_')}-{version}.log"
    return suite.run(args, log)


# --- expectations -----------------------------------------------------------------------


def read_expected(path: Path) -> set[str]:
    """One scenario name per line; `#` starts a comment. A name applies to every version."""
    names = set()
    for raw in path.read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if line:
            names.add(line)
    return names


def compare(
    results: dict[str, list[ScenarioResult]], expected: set[str], *, complete: bool = True
) -> tuple[list[str], list[str]]:
    """Return (problems, report lines).

    With ``complete`` (every spec version ran), a listed name no run has is a problem too.
    """
    problems: list[str] = []
    lines: list[str] = []
    seen: set[str] = set()
    for version, items in results.items():
        lines.append(f"== spec version {version}")
        for res in items:
            seen.add(res.name)
            listed = res.name in expected
            if res.passed:
                mark = "STALE (listed as expected failure but passed)" if listed else "pass"
                if res.flaky:
                    mark = "pass alone (FLAKY: failed in the parallel suite)"
                if listed:
                    problems.append(
                        f"{version} {res.name}: passes but is listed in expected failures"
                    )
            else:
                mark = "expected failure" if listed else "FAIL"
                if not listed:
                    problems.append(f"{version} {res.name}: unexpected failure")
            lines.append(f"  {mark:<12} {res.name}")
            if res.flaky or (not res.passed and not listed):
                lines.extend(f"      {reason}" for reason in res.reasons)
    for name in sorted(expected - seen) if complete else ():
        problems.append(f"{name}: listed in expected failures but no suite run has it")
    return problems, lines


# --- main -------------------------------------------------------------------------------


def _parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--suite-bin", type=Path, required=True, help="dir with node and conformance"
    )
    parser.add_argument("--client", required=True, help="client command (no spaces in paths)")
    parser.add_argument("--spec-version", action="append", dest="versions")
    parser.add_argument("--single", action="append", help="SCENARIO@VERSION run alone")
    parser.add_argument("--expected", type=Path, default=DEFAULT_EXPECTED)
    parser.add_argument("--timeout-ms", type=int, default=120000, help="per scenario client")
    parser.add_argument("--budget", type=float, default=600.0, help="seconds per suite run")
    parser.add_argument(
        "--no-rerun",
        dest="rerun",
        action="store_false",
        help="do not re-run alone a scenario that failed in the parallel suite",
    )
    parser.add_argument("--keep", type=Path, help="keep the suite's outputs in this directory")
    return parser.parse_args(argv)


def _node_problem(bin_dir: Path) -> str | None:
    """The suite's CLI needs Node >= 22; make sure the one beside it is that."""
    try:
        out = subprocess.run(
            [str(bin_dir / "node"), "--version"], capture_output=True, text=True, timeout=60
        ).stdout.strip()
    except OSError as exc:
        return f"no node in {bin_dir}: {exc}"
    major = re.match(r"v(\d+)\.", out)
    if major is None or int(major.group(1)) < 22:
        return f"the suite needs Node >= 22; {bin_dir / 'node'} is {out or 'unusable'}"
    return None


def _main_isolated(args: argparse.Namespace) -> int:
    problem = _check_isolation() or _node_problem(args.suite_bin.resolve())
    if problem:
        print(f"conformance: {problem}")
        return 2
    suite = Suite(args.suite_bin.resolve(), args.client, args.timeout_ms, args.budget)
    expected = read_expected(args.expected)
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="mrtr-conformance-", dir=args.keep))
    print(f"conformance: outputs in {work}")
    results: dict[str, list[ScenarioResult]] = {}
    reruns_left = MAX_RERUNS if args.rerun else 0
    for version in args.versions or DEFAULT_VERSIONS:
        started = time.monotonic()
        results[version] = []
        for res in run_version(suite, version, work):
            if not res.passed and res.name not in expected and reruns_left > 0:
                reruns_left -= 1
                res = rerun_alone(suite, res, version, work)
            results[version].append(res)
        print(f"conformance: {version} suite took {time.monotonic() - started:.0f}s")
    problems, lines = compare(results, expected, complete=args.versions is None)
    print("\n".join(lines))
    for spec in DEFAULT_SINGLE if args.single is None else args.single:
        name, _, version = spec.partition("@")
        code, output = run_single(suite, name, version or DEFAULT_VERSIONS[0], work)
        want_zero = name not in expected
        ok = code == 0 if want_zero else code not in (0, None)
        verdict = "exit 0" if code == 0 else f"exit {code}" if code is not None else "killed"
        print(f"== single {name} @ {version}: {verdict} ({'ok' if ok else 'NOT OK'})")
        if not ok:
            problems.append(
                f"single run of {name}: {verdict}, wanted {'0' if want_zero else 'non-zero'}"
            )
            tail = ANSI_ESCAPE.sub("", output).strip().splitlines()[-25:]
            print("\n".join("      " + line for line in tail))
    if problems:
        print("conformance: FAILED")
        print("\n".join(f"  - {p}" for p in problems))
        return 1
    print("conformance: OK, results match expected-failures.txt")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = _parse_args(argv)
    if " " in args.client and any(" " in part for part in shlex.split(args.client)):
        print("conformance: the suite splits the client command on spaces; use paths without any")
        return 2
    if os.environ.get(NETNS_MARK) != "1":
        return _enter_isolated_namespace(argv)
    return _main_isolated(args)


if __name__ == "__main__":
    sys.exit(main())
