"""TARGET: which server a command talks to, resolved to plain connection data.

A TARGET is a URL; a configured server (``NAME``, ``SOURCE:NAME``, ``FILE.json:NAME``);
``demo`` (the bundled demo server); a ``.py`` file (run with this Python); or, with no
TARGET, the command after ``--`` (an ad-hoc stdio server). The result is a `Target`:
plain data that the connect step turns into a transport, and that a paused call records
(without secrets) to reconnect later.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from mrtr.cli._config import (
    ConfigFile,
    Expander,
    ServerEntry,
    discover_files,
    expand,
    load_entries,
    redact_arg,
    redact_url,
)
from mrtr.cli._exit import UsageError

__all__ = ["Target", "parse_header", "resolve_target"]

_URL = re.compile(r"^https?://", re.I)

DEMO_STATE_KEY = hashlib.sha256(b"mrtr demo server: a public key, for demos only").hexdigest()
"""The demo server's sealing key, the same in every process so a paused demo call resumes.

It is public: the demo's state holds nothing secret. Never use a published key elsewhere."""


@dataclass(frozen=True, slots=True)
class Target:
    """Where a server is and how to reach it (secrets included: never written as is)."""

    label: str
    transport: str  # "stdio" or "http"
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    origin: str | None = None  # the config file it came from
    untrusted: bool = False  # that file is a project file (the working directory's)
    notes: tuple[str, ...] = ()  # what the person should know about how it was chosen

    def describe(self) -> dict[str, Any]:
        """How to find this server again, without any secret (for output and paused files)."""
        shown: dict[str, Any] = {"target": self.label, "transport": self.transport}
        if self.url is not None:
            shown["url"] = redact_url(self.url)
        if self.origin is not None:
            shown["configFile"] = self.origin
        if self.command is not None:
            shown["command"] = [self.command, *(redact_arg(a) for a in self.args)]
        return shown


def parse_header(text: str, expander: Expander) -> tuple[str, str]:
    """``-H "Name: Value"``, with ``${VAR}`` in the value expanded from the environment."""
    name, sep, value = text.partition(":")
    if not sep or not name.strip() or not re.fullmatch(r"[!-9;-~]+", name.strip()):
        raise UsageError(f"-H expects 'Name: Value', got {text!r}")
    return name.strip(), expander(value.strip(), f"-H {name.strip()}")


def _from_entry(
    entry: ServerEntry, expander: Expander, label: str, notes: tuple[str, ...] = ()
) -> Target:
    try:
        resolved = expand(entry, expander)
    except UsageError as exc:
        if not notes:
            raise
        raise UsageError(f"{exc}; {'; '.join(notes)}") from None
    if resolved.transport == "sse":
        raise UsageError(
            f"{label}: the legacy HTTP+SSE transport is not supported; "
            "point mrtr at the server's streamable HTTP endpoint"
        )
    if entry.untrusted:
        notes += (f"server {entry.name!r} comes from the project file {entry.path}",)
    where = {"origin": str(entry.path), "untrusted": entry.untrusted, "notes": notes}
    if resolved.transport == "http":
        if not resolved.url:
            raise UsageError(f"{label}: an http server needs a url in {entry.path}")
        return Target(label, "http", url=resolved.url, headers=dict(resolved.headers), **where)  # type: ignore[arg-type]
    if not resolved.command:
        raise UsageError(f"{label}: a stdio server needs a command in {entry.path}")
    return Target(
        label,
        "stdio",
        command=resolved.command,
        args=resolved.args,
        env=dict(resolved.env),
        cwd=resolved.cwd,
        **where,  # type: ignore[arg-type]
    )


def _pick(name: str, entries: Sequence[ServerEntry], where: str) -> ServerEntry:
    """The entry named `name`; a project file's entry never shadows the user's own silently."""
    picked, _ = _pick_noting(name, entries, where)
    return picked


def _pick_noting(
    name: str, entries: Sequence[ServerEntry], where: str
) -> tuple[ServerEntry, tuple[str, ...]]:
    hits = [e for e in entries if e.name == name]
    if not hits:
        names = sorted({e.name for e in entries} | {e.qualified for e in entries})
        close = difflib.get_close_matches(name, names, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise UsageError(f"no server named {name!r} {where}{hint} (see `mrtr servers`)")
    own = [e for e in hits if not e.untrusted]
    notes: tuple[str, ...] = ()
    if own and len(own) < len(hits):
        shadow = next(e for e in hits if e.untrusted)
        notes = (
            f"the project file {shadow.path} also defines {name!r}; using yours from"
            f" {own[0].path} (name it {shadow.path}:{name} to use the project's)",
        )
        hits = own
    distinct = {(e.source, e.path) for e in hits}
    if len(distinct) > 1 and len({h.qualified for h in hits}) > 1:
        choices = ", ".join(sorted({h.qualified for h in hits}))
        raise UsageError(f"{name!r} is configured in several places; name one of: {choices}")
    return hits[0], notes


def resolve_target(
    target: str | None,
    command: Sequence[str],
    *,
    configs: list[ConfigFile],
    expander: Expander,
    headers: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
) -> Target:
    """Resolve a TARGET (or the command after ``--``) into a `Target`.

    Raises:
        UsageError: nothing to connect to, an unknown or ambiguous name, a config error.
    """
    extra_headers = dict(parse_header(h, expander) for h in headers)
    extra_env = dict(env or {})
    if command:
        if target is not None:
            raise UsageError("give either a TARGET or a command after --, not both")
        label = " ".join([command[0], *(redact_arg(a) for a in command[1:])])
        return Target(
            label, "stdio", command=command[0], args=tuple(command[1:]),
            env=extra_env, cwd=cwd,
        )  # fmt: skip
    if not target:
        raise UsageError("no server: give a TARGET (URL or configured name) or -- COMMAND ARGS")
    if _URL.match(target):
        return Target(redact_url(target), "http", url=target, headers=extra_headers)
    found = _resolve_named(target, configs, expander)
    if found is None and target.endswith(".py") and Path(target).is_file():
        found = Target(target, "stdio", command=sys.executable, args=(target,))
    if found is None:
        raise UsageError(f"no server named {target!r}")
    if found.transport == "http":
        return replace(found, headers={**found.headers, **extra_headers})
    return replace(found, env={**found.env, **extra_env}, cwd=cwd or found.cwd)


def _resolve_named(target: str, configs: list[ConfigFile], expander: Expander) -> Target | None:
    head, sep, name = target.rpartition(":")
    if sep and head.endswith((".json", ".jsonc")):
        path = Path(head)
        entries = load_entries(ConfigFile("config", path, project=Path.cwd()))
        return _from_entry(_pick(name, entries, f"in {path}"), expander, target)
    entries = [e for c in configs for e in load_entries(c)]
    if sep and head and "/" not in head:
        scoped = [e for e in entries if e.source == head]
        if scoped:
            return _from_entry(_pick(name, scoped, f"from {head}"), expander, target)
    if any(e.name == target for e in entries):
        entry, notes = _pick_noting(target, entries, "in any config")
        return _from_entry(entry, expander, target, notes)
    if target == "demo":
        demo_args = ("-m", "mrtr", "demo-server")
        env = {"MRTR_DEMO_STATE_KEY": DEMO_STATE_KEY}
        return Target("demo", "stdio", command=sys.executable, args=demo_args, env=env)
    if target.endswith(".py") and Path(target).is_file():
        return None
    if entries or not sep:
        _pick(target, entries, "in any config")  # raises, with suggestions
    return None


def default_expander(
    inputs: Mapping[str, str] | None = None,
    *,
    ask_input: Any = None,
    trust_project: bool = False,
    consent: Any = None,
) -> Expander:
    """An `Expander` over this process's environment, home and working directory."""
    return Expander(
        env=dict(os.environ),
        home=Path.home(),
        workspace=Path.cwd(),
        inputs=dict(inputs or {}),
        ask_input=ask_input,
        trust_project=trust_project,
        consent=consent,
    )


def config_files(explicit: list[str], *, discover: bool = True) -> list[ConfigFile]:
    """The config files of this user and working directory, in priority order."""
    return discover_files(Path.cwd(), Path.home(), os.environ, explicit=explicit, discover=discover)
