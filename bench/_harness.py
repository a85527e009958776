"""Measurement plumbing: fresh processes, A B A B alternation, statistics and tables.

Every client measurement runs in a fresh subprocess (`bench._worker`), so the two
libraries never share a process, an import cache or a heap. Repetitions alternate the
libraries (mrtr, official, mrtr, official, ...) so that drift on a shared machine hits
both sides alike.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
LIBS = ("mrtr", "official")
_RESULT_PREFIX = "BENCH_RESULT "


class WorkerFailed(Exception):
    """A measurement process exited with an error; the message holds its stderr tail."""


@dataclass
class ChildRun:
    """What the parent saw of one child process: wall time, rusage and its stdout."""

    wall: float
    cpu: float
    maxrss_kib: int
    stdout: str


def write_bytecode(*trees: str | Path) -> None:
    """Write the bytecode caches of the trees under test before anything is measured.

    The official SDK is installed with its caches written, as an installed mrtr would be.
    Under ``PYTHONDONTWRITEBYTECODE`` (set in some shells) a checkout's modules would
    otherwise be compiled from source in every fresh process: a cost of the checkout,
    charged to mrtr alone. `compileall` writes the caches whatever that variable says.
    """
    import compileall

    for tree in (REPO / "src", REPO / "bench", *trees):
        if Path(tree).is_dir():
            compileall.compile_dir(str(tree), quiet=1)


def run_child(
    argv: Sequence[str], *, timeout: float = 600.0, env: Mapping[str, str] | None = None
) -> ChildRun:
    """Run `argv` to completion and keep its stdout (the worker reports its own metrics).

    `env` is added to this process's environment (for example another tree's
    ``PYTHONPATH``).
    """
    start = time.perf_counter()
    proc = subprocess.Popen(
        list(argv),
        cwd=REPO,
        env=None if env is None else {**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise WorkerFailed(f"timed out after {timeout}s: {' '.join(argv)}") from None
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise WorkerFailed(f"exit {proc.returncode}: {err.strip()[-1500:]}")
    return ChildRun(wall=wall, cpu=0.0, maxrss_kib=0, stdout=out)


def run_child_rusage(argv: Sequence[str], *, env: Mapping[str, str] | None = None) -> ChildRun:
    """Run a short command, reaping it with `wait4` to get its own CPU time and peak RSS."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        list(argv), cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.stderr:
        proc.stderr.close()
    if proc.returncode != 0:
        raise WorkerFailed(f"exit {proc.returncode}: {err.strip()[-1500:]}")
    return ChildRun(
        wall=wall, cpu=usage.ru_utime + usage.ru_stime, maxrss_kib=usage.ru_maxrss, stdout=""
    )


def run_worker(
    spec: dict[str, Any], *, timeout: float = 900.0, env: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """Run one `bench._worker` job in a fresh interpreter and return its result dict."""
    return run_worker_module("bench._worker", json.dumps(spec), timeout=timeout, env=env)


def run_worker_module(
    module: str, *args: str, timeout: float = 900.0, env: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """Run `python -m module *args` in a fresh interpreter; its `BENCH_RESULT` line, parsed."""
    child = run_child([sys.executable, "-m", module, *args], timeout=timeout, env=env)
    for line in reversed(child.stdout.splitlines()):
        if line.startswith(_RESULT_PREFIX):
            result: dict[str, Any] = json.loads(line[len(_RESULT_PREFIX) :])
            return result
    raise WorkerFailed(f"no result line in output: {child.stdout[-500:]!r}")


@dataclass
class Samples:
    """Repeated measurements of one metric for one library (failures kept apart)."""

    values: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)

    def median(self) -> float | None:
        return statistics.median(self.values) if self.values else None


def alternate(
    reps: int, measure: Callable[[str], dict[str, Any]], libs: Sequence[str] = LIBS
) -> dict[str, dict[str, Samples]]:
    """Call `measure(lib)` for lib in A B A B ... order; collect every metric it returns.

    A failing measurement (`WorkerFailed`) is recorded, not raised, so that one broken
    side does not hide the other's numbers.
    """
    out: dict[str, dict[str, Samples]] = {lib: {} for lib in libs}
    for _ in range(reps):
        for lib in libs:
            try:
                metrics = measure(lib)
            except WorkerFailed as exc:
                out[lib].setdefault("_", Samples()).failures.append(str(exc))
                continue
            for name, value in metrics.items():
                samples = out[lib].setdefault(name, Samples())
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    samples.values.append(float(value))
                elif value is not None:
                    samples.texts.append(str(value))
    return out


# --- tables -------------------------------------------------------------------------


@dataclass
class Row:
    """One metric in a scenario table: how to show it and the target on the ratio."""

    label: str
    metric: str
    unit: str = "ms"
    scale: float = 1000.0
    target: float | None = None  # pass when ours / theirs <= target
    higher_is_better: bool = False  # then pass when ours / theirs >= target
    target_label: str = ""  # how to print the target ("1/3"); default: the number


def _fmt(value: float | None, row: Row) -> str:
    if value is None:
        return "n/a"
    scaled = value * row.scale
    if abs(scaled) >= 100:
        return f"{scaled:.0f}"
    if abs(scaled) >= 10:
        return f"{scaled:.1f}"
    return f"{scaled:.2f}"


def _range(samples: Samples | None, row: Row) -> str:
    if samples is None or not samples.values:
        return "n/a"
    return f"{_fmt(min(samples.values), row)}-{_fmt(max(samples.values), row)}"


def _verdict(ratio: float | None, row: Row) -> str:
    if ratio is None or row.target is None:
        return ""
    ok = ratio >= row.target if row.higher_is_better else ratio <= row.target
    sign = "≥" if row.higher_is_better else "≤"
    return f"{'met' if ok else 'MISSED'} ({sign}{row.target_label or f'{row.target:g}'})"


VERDICTS: list[tuple[str, str, str, str]] = []
"""Every targeted metric of the run so far: (table title, metric, value, verdict)."""


def record_verdict(title: str, metric: str, value: str, verdict: str) -> None:
    """Remember one target check for the summary printed at the end of the run."""
    VERDICTS.append((title.split(" (")[0], metric, value, verdict))


def summary() -> str:
    """The targets of the run in one Markdown table."""
    lines = ["### Targets", "", "| table | metric | ratio | verdict |", "|---|---|---:|---|"]
    lines += [f"| {t} | {m} | {v} | {d} |" for t, m, v, d in VERDICTS]
    return "\n".join(lines) + "\n"


_ERROR_LINE = re.compile(r"([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)\b.*)")


def _error_line(message: str) -> str:
    """The last line of a traceback that names an exception (else the last line)."""
    lines = [line for line in message.splitlines() if line.strip()]
    for line in reversed(lines):
        match = _ERROR_LINE.search(line)
        if match and "Traceback" not in line:
            return match.group(1)[:300]
    return lines[-1][:300] if lines else message


def table(
    title: str,
    rows: Sequence[Row],
    data: dict[str, dict[str, Samples]],
    *,
    ours: str = "mrtr",
    theirs: str = "official",
    note: str = "",
) -> str:
    """A Markdown table: metric, our median, theirs, ratio, min-max of each, target."""
    lines = [
        f"### {title}",
        "",
        f"| metric | {ours} (median) | {theirs} (median) | ratio | {ours} min-max "
        f"| {theirs} min-max | target |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        a, b = data.get(ours, {}).get(row.metric), data.get(theirs, {}).get(row.metric)
        ma, mb = (a.median() if a else None), (b.median() if b else None)
        ratio = ma / mb if ma is not None and mb else None
        if row.target is not None:
            record_verdict(
                title,
                row.label,
                "n/a" if ratio is None else f"{ratio:.2f}",
                _verdict(ratio, row) or "n/a (no data)",
            )
        lines.append(
            f"| {row.label} ({row.unit}) | {_fmt(ma, row)} | {_fmt(mb, row)} "
            f"| {'n/a' if ratio is None else f'{ratio:.2f}'} | {_range(a, row)} "
            f"| {_range(b, row)} | {_verdict(ratio, row)} |"
        )
    failures = [
        f"- {lib}: {_error_line(msg)}"
        for lib, metrics in data.items()
        if lib in (ours, theirs)
        for msg in metrics.get("_", Samples()).failures[:1]
    ]
    if failures:
        lines += ["", "Failures:", *failures]
    if note:
        lines += ["", note]
    return "\n".join(lines) + "\n"


# --- servers --------------------------------------------------------------------------


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _wait_listening(port: int, proc: subprocess.Popen[bytes], deadline: float) -> None:
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise WorkerFailed(f"HTTP server exited early with {proc.returncode}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
            return
        time.sleep(0.1)
    raise WorkerFailed(f"HTTP server did not listen on {port} in time")


@contextlib.contextmanager
def http_server(module: str = "bench.servers.official_server") -> Iterator[str]:
    """Serve `module` over streamable HTTP (uvicorn, 127.0.0.1, free port); yield its URL."""
    with http_server_process(module) as (url, _):
        yield url


@contextlib.contextmanager
def http_server_process(
    module: str, *args: str, env: dict[str, str] | None = None
) -> Iterator[tuple[str, int]]:
    """`http_server` with more arguments (and environment) for the server; its URL and pid."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", module, "http", "--port", str(port), *args],
        cwd=REPO,
        env=None if env is None else {**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_listening(port, proc, time.monotonic() + 60)
        yield f"http://127.0.0.1:{port}/mcp", proc.pid
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# --- three-way tables: ours, the official SDK's and the floor ----------------------------


@dataclass
class FloorRow:
    """One metric of a three-way table: `side` against the official side and the floor.

    ``target`` is on ours / official, ``floor_target`` on ours / floor (both: pass when
    at most the target, or at least it when ``higher_is_better``).
    """

    label: str
    metric: str
    side: str = "mrtr"
    unit: str = "µs"
    scale: float = 1e6
    target: float | None = None
    floor_target: float | None = None
    higher_is_better: bool = False


def _median_of(data: dict[str, dict[str, Samples]], side: str, metric: str) -> Samples | None:
    return data.get(side, {}).get(metric)


def floor_table(
    title: str,
    rows: Sequence[FloorRow],
    data: dict[str, dict[str, Samples]],
    *,
    theirs: str = "official",
    floor: str = "floor",
    note: str = "",
) -> str:
    """A Markdown table: each row's side, the official side and the floor, both ratios.

    Medians over the repetitions, min-max of each side; the verdicts are recorded for
    the run's summary.
    """
    lines = [
        f"### {title}",
        "",
        "| metric | ours (median) | official (median) | floor (median) | ours / official "
        "| ours / floor | ours min-max | official min-max | floor min-max | target |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        fmt_row = Row(row.label, row.metric, row.unit, row.scale)
        a = _median_of(data, row.side, row.metric)
        b = _median_of(data, theirs, row.metric)
        f = _median_of(data, floor, row.metric)
        ma, mb, mf = (s.median() if s else None for s in (a, b, f))
        vs_official = ma / mb if ma is not None and mb else None
        vs_floor = ma / mf if ma is not None and mf else None
        verdicts = []
        for ratio, target, what in (
            (vs_official, row.target, "official"),
            (vs_floor, row.floor_target, "floor"),
        ):
            if target is None:
                continue
            check = Row(row.label, row.metric, target=target, higher_is_better=row.higher_is_better)
            verdict = _verdict(ratio, check) or "n/a (no data)"
            verdicts.append(f"{verdict} vs {what}")
            record_verdict(
                title,
                f"{row.label} / {what}",
                "n/a" if ratio is None else f"{ratio:.2f}",
                verdict,
            )
        lines.append(
            f"| {row.label} ({row.unit}) | {_fmt(ma, fmt_row)} | {_fmt(mb, fmt_row)} "
            f"| {_fmt(mf, fmt_row)} | {'n/a' if vs_official is None else f'{vs_official:.2f}'} "
            f"| {'n/a' if vs_floor is None else f'{vs_floor:.2f}'} | {_range(a, fmt_row)} "
            f"| {_range(b, fmt_row)} | {_range(f, fmt_row)} | {'; '.join(verdicts)} |"
        )
    failures = [
        f"- {side}: {_error_line(msg)}"
        for side, metrics in data.items()
        for msg in metrics.get("_", Samples()).failures[:1]
    ]
    if failures:
        lines += ["", "Failures:", *failures]
    if note:
        lines += ["", note]
    return "\n".join(lines) + "\n"
