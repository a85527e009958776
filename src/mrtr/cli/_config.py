"""Servers from the config files users already have (Claude, Cursor, VS Code, Windsurf).

Each host keeps a map from server name to a stdio entry (``command``, ``args``, ``env``)
or a remote one (``url``/``serverUrl``, ``headers``); they differ in the wrapper key, the
URL key and the interpolation syntax. This module finds the files, reads them (JSON, or
JSONC for VS Code and Cursor), and normalises every entry into a `ServerEntry` that still
holds its ``${...}`` templates: `expand` resolves them only when a server is used, and
`redacted` shows an entry without its secrets. Host files are read, never written.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from mrtr.cli._exit import UsageError

__all__ = [
    "ConfigFile",
    "ServerEntry",
    "discover_files",
    "expand",
    "load_entries",
    "read_config",
    "redacted",
    "strip_jsonc",
]

MAX_CONFIG_BYTES = 4 * 1024 * 1024
"""Config files larger than this are refused (a config is a few KB)."""


@dataclass(frozen=True, slots=True)
class ConfigFile:
    """One config file to read: where it is and which host's format it follows."""

    source: str
    path: Path
    project: Path | None = None  # Claude Code's ~/.claude.json: the project to look up
    untrusted: bool = False  # found in the working directory (a cloned repository's file)


@dataclass(frozen=True, slots=True)
class ServerEntry:
    """One configured server, normalised, its values still unexpanded templates."""

    name: str
    source: str
    path: Path
    transport: str  # "stdio", "http" or "sse"
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    inputs: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    untrusted: bool = False  # from a project file: no secrets from the environment unasked

    @property
    def qualified(self) -> str:
        """``SOURCE:NAME``: how to name this entry when the bare name is ambiguous."""
        return f"{self.source}:{self.name}"


def _user_config_dir(home: Path, env: Mapping[str, str]) -> list[Path]:
    """Where desktop apps keep per-user settings on this OS."""
    if sys.platform == "darwin":
        return [home / "Library" / "Application Support"]
    if sys.platform == "win32":
        return [Path(env["APPDATA"])] if env.get("APPDATA") else []
    xdg = env.get("XDG_CONFIG_HOME")
    return [Path(xdg) if xdg else home / ".config"]


def discover_files(
    cwd: Path, home: Path, env: Mapping[str, str], *, explicit: list[str], discover: bool = True
) -> list[ConfigFile]:
    """The config files to read, in priority order (explicit, project, mrtr, user)."""
    found: list[ConfigFile] = [ConfigFile("config", Path(p)) for p in explicit]
    if env.get("MRTR_CONFIG"):
        found.append(ConfigFile("config", Path(env["MRTR_CONFIG"])))
    if not discover:
        return found
    for folder in (cwd, *cwd.parents):
        if folder == home:
            break  # the files in the home folder itself are the user's own (below)
        found += [
            ConfigFile("claude-code", folder / ".mcp.json", untrusted=True),
            ConfigFile("vscode", folder / ".vscode" / "mcp.json", untrusted=True),
            ConfigFile("cursor", folder / ".cursor" / "mcp.json", untrusted=True),
        ]
    app_dirs = _user_config_dir(home, env)
    mrtr_dir = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else home / ".config"
    found.append(ConfigFile("mrtr", mrtr_dir / "mrtr" / "servers.json"))
    found.append(ConfigFile("claude-code", home / ".claude.json", project=cwd))
    found += [
        ConfigFile("claude-desktop", d / "Claude" / "claude_desktop_config.json") for d in app_dirs
    ]
    found.append(ConfigFile("cursor", home / ".cursor" / "mcp.json"))
    for d in app_dirs:
        found += [
            ConfigFile("vscode", d / "Code" / "User" / "mcp.json"),
            ConfigFile("vscode", d / "Code - Insiders" / "User" / "mcp.json"),
        ]
    found.append(ConfigFile("windsurf", home / ".codeium" / "windsurf" / "mcp_config.json"))
    seen: set[Path] = set()
    kept = []
    for config in found:
        if config.source != "config" and not config.path.is_file():
            continue
        key = config.path.resolve()
        if key not in seen:  # the walk up from cwd may reach a user-level file
            seen.add(key)
            kept.append(config)
    return kept


def strip_jsonc(text: str) -> str:
    """Remove ``//`` and ``/* */`` comments and trailing commas outside strings."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i : j + 1])
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
        elif ch == ",":
            j = i + 1
            while j < n and text[j] in " \t\r\n":
                j += 1
            if j < n and text[j] in "]}":
                i += 1
                continue
            out.append(ch)
            i += 1
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def read_config(path: Path) -> Any:
    """Parse one config file (JSON with comments and trailing commas allowed)."""
    try:
        if path.stat().st_size > MAX_CONFIG_BYTES:
            raise UsageError(f"{path}: larger than {MAX_CONFIG_BYTES} bytes; not a config file")
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read config {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not UTF-8 text") from None
    try:
        return json.loads(strip_jsonc(text))
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from None


def _server_maps(data: Any, config: ConfigFile) -> Iterator[Mapping[str, Any]]:
    if not isinstance(data, dict):
        return
    for key in ("mcpServers", "servers"):
        if isinstance(data.get(key), dict):
            yield data[key]
    mcp = data.get("mcp")
    if isinstance(mcp, dict) and isinstance(mcp.get("servers"), dict):
        yield mcp["servers"]  # the old VS Code settings.json form
    projects = data.get("projects")
    if config.project is not None and isinstance(projects, dict):
        local = projects.get(str(config.project))
        if isinstance(local, dict) and isinstance(local.get("mcpServers"), dict):
            yield local["mcpServers"]


def _transport_of(raw: Mapping[str, Any], url: str | None) -> str:
    kind = str(raw.get("type") or raw.get("transport") or "").lower()
    if kind in ("http", "streamable-http", "streamablehttp", "streamable_http"):
        return "http"
    if kind == "sse":
        return "sse"
    if kind == "stdio" or raw.get("command"):
        return "stdio"
    if url is not None:
        return "sse" if url.rstrip("/").endswith("/sse") else "http"
    return "stdio"


def _strings(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {str(k): "" if v is None else str(v) for k, v in value.items()}


def _entry(name: str, raw: Any, config: ConfigFile, inputs: dict[str, Any]) -> ServerEntry | None:
    if not isinstance(raw, dict) or raw.get("disabled") is True or raw.get("enabled") is False:
        return None
    url = raw.get("url") or raw.get("serverUrl") or raw.get("httpUrl")
    url = str(url) if url else None
    command = raw.get("command")
    args = raw.get("args")
    argv: list[str] = [str(a) for a in args] if isinstance(args, list) else []
    if isinstance(command, str) and not argv and " " in command.strip():
        command, *argv = shlex.split(command)
    return ServerEntry(
        name=name,
        source=config.source,
        path=config.path,
        transport=_transport_of(raw, url),
        command=str(command) if command else None,
        args=tuple(argv),
        env=_strings(raw.get("env")),
        cwd=str(raw["cwd"]) if raw.get("cwd") else None,
        url=url,
        headers=_strings(raw.get("headers")),
        inputs=inputs,
        untrusted=config.untrusted,
    )


def load_entries(config: ConfigFile) -> list[ServerEntry]:
    """Every server one config file declares, in file order."""
    data = read_config(config.path)
    inputs: dict[str, Any] = {}
    if isinstance(data, dict) and isinstance(data.get("inputs"), list):
        inputs = {str(i["id"]): i for i in data["inputs"] if isinstance(i, dict) and "id" in i}
    entries = []
    for servers in _server_maps(data, config):
        for name, raw in servers.items():
            entry = _entry(str(name), raw, config, inputs)
            if entry is not None:
                entries.append(entry)
    return entries


_VARIABLE = re.compile(r"\$\{([^}:]+)(?::(-)?([^}]*))?\}")


@dataclass(frozen=True, slots=True)
class Expander:
    """Resolves ``${VAR}``, ``${VAR:-default}``, ``${env:VAR}``, ``${input:ID}`` and friends."""

    env: Mapping[str, str]
    home: Path
    workspace: Path
    inputs: Mapping[str, str] = field(default_factory=dict)
    ask_input: Callable[[str, Mapping[str, Any]], str | None] | None = None
    trust_project: bool = False  # --trust-project: project files may use the environment
    consent: Callable[[ServerEntry, list[str]], bool] | None = None  # asks the person

    def environment_names(self, entry: ServerEntry) -> list[str]:
        """The set environment variables an entry's templates would read."""
        names = set()
        for value in _template_values(entry):
            for match in _VARIABLE.finditer(value):
                head, dash, rest = match.group(1), match.group(2), match.group(3)
                if head in ("workspaceFolder", "userHome", "input"):
                    continue
                name = rest if head == "env" and rest is not None and not dash else head
                if name in self.env:
                    names.add(name)
        return sorted(names)

    def __call__(self, value: str, where: str, declared: Mapping[str, Any] | None = None) -> str:
        """Expand every variable in ``value``; ``where`` names it in error messages."""

        def one(match: re.Match[str]) -> str:
            head, dash, rest = match.group(1), match.group(2), match.group(3)
            if head == "workspaceFolder":
                return str(self.workspace)
            if head == "userHome":
                return str(self.home)
            if head == "env" and rest is not None and not dash:
                return self._variable(rest, None, where)
            if head == "input" and rest is not None and not dash:
                return self._input(rest, where, declared or {})
            return self._variable(head, rest if dash else None, where)

        expanded = _VARIABLE.sub(one, value)
        if expanded.startswith("~/"):
            expanded = str(self.home) + expanded[1:]
        return expanded

    def _variable(self, name: str, default: str | None, where: str) -> str:
        if name in self.env:
            return self.env[name]
        if default is not None:
            return default
        raise UsageError(f"{where}: environment variable {name} is not set")

    def _input(self, ident: str, where: str, declared: Mapping[str, Any]) -> str:
        if ident in self.inputs:
            return self.inputs[ident]
        env_name = "MRTR_INPUT_" + re.sub(r"[^A-Za-z0-9]", "_", ident).upper()
        if env_name in self.env:
            return self.env[env_name]
        spec = declared.get(ident, {})
        if self.ask_input is not None:
            answer = self.ask_input(ident, spec)
            if answer is not None:
                return answer
        if isinstance(spec, dict) and isinstance(spec.get("default"), str):
            return str(spec["default"])
        raise UsageError(f"{where}: ${{input:{ident}}} has no value; pass --input {ident}=VALUE")


def _check_consent(entry: ServerEntry, expander: Expander) -> None:
    """A project file's server reads the user's environment only with the user's consent.

    Raises:
        UsageError: it asks for set variables, and neither --trust-project nor a yes said so.
    """
    names = expander.environment_names(entry) if entry.untrusted else []
    if not names or expander.trust_project:
        return
    if expander.consent is not None and expander.consent(entry, names):
        return
    wanted = ", ".join(f"${{{n}}}" for n in names)
    raise UsageError(
        f"{entry.path}: server {entry.name!r} comes from a project file (this directory, not"
        f" your own config) and wants your environment variable(s) {wanted}; pass"
        " --trust-project if you trust this file"
    )


def expand(entry: ServerEntry, expander: Expander) -> ServerEntry:
    """The entry with every template resolved (raises `UsageError` naming what is unset).

    A project file's entry gets the user's environment variables only with consent.
    """
    _check_consent(entry, expander)
    where = f"{entry.path}: server {entry.name!r}"

    def one(value: str, part: str) -> str:
        return expander(value, f"{where}, {part}", entry.inputs)

    return replace(
        entry,
        command=one(entry.command, "command") if entry.command else None,
        args=tuple(one(a, "args") for a in entry.args),
        env={k: one(v, f"env.{k}") for k, v in entry.env.items()},
        cwd=one(entry.cwd, "cwd") if entry.cwd else None,
        url=one(entry.url, "url") if entry.url else None,
        headers={k: one(v, f"headers.{k}") for k, v in entry.headers.items()},
    )


_SECRET_ARG = re.compile(r"^((?:authorization|x-api-key|cookie|api-key)\s*:\s*)(.+)$", re.I)
_SECRET_FLAG = re.compile(r"^(--?[\w-]*(?:token|key|secret|password)[\w-]*=)(.+)$", re.I)
REDACTED = "<redacted>"


def redact_value(value: str) -> str:
    """A literal value becomes ``<redacted>``; a ``${...}`` template is shown (it is no secret)."""
    if not value:
        return value
    if _VARIABLE.fullmatch(value.strip()):
        return value
    parts = value.split(" ", 1)
    if len(parts) == 2 and parts[0].lower() in ("bearer", "basic", "token"):
        return f"{parts[0]} {redact_value(parts[1])}"
    return REDACTED


_SECRET_NAME = re.compile(
    r"(token|key|secret|password|passwd|pwd|auth|sig|signature|session|credential|code|access)",
    re.I,
)


def redact_url(url: str) -> str:
    """A URL for display: userinfo and secret-looking query values hidden (templates kept)."""
    from urllib.parse import urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    netloc = parts.netloc
    if "@" in netloc:
        netloc = REDACTED + "@" + netloc.rpartition("@")[2]
    query = parts.query
    if query:
        pairs = []
        for pair in query.split("&"):
            name, sep, value = pair.partition("=")
            if sep and value and _SECRET_NAME.search(name) and not _VARIABLE.fullmatch(value):
                value = REDACTED
            pairs.append(name + sep + value)
        query = "&".join(pairs)
    if (netloc, query) == (parts.netloc, parts.query):
        return url
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def redact_arg(arg: str) -> str:
    """A command-line argument with a secret-looking value hidden (``--token=...``)."""
    return _redact_arg(arg)


def _redact_arg(arg: str) -> str:
    for pattern in (_SECRET_ARG, _SECRET_FLAG):
        match = pattern.match(arg)
        if match:
            return match.group(1) + redact_value(match.group(2))
    return arg


def redacted(entry: ServerEntry) -> dict[str, Any]:
    """The entry as plain data for display: env and header values hidden unless templates."""
    shown: dict[str, Any] = {
        "name": entry.name,
        "source": entry.source,
        "file": str(entry.path),
        "transport": entry.transport,
    }
    if entry.untrusted:
        shown["projectFile"] = True
    if entry.command is not None:
        shown["command"] = entry.command
        shown["args"] = [_redact_arg(a) for a in entry.args]
    if entry.env:
        shown["env"] = {k: redact_value(v) for k, v in entry.env.items()}
    if entry.cwd:
        shown["cwd"] = entry.cwd
    if entry.url is not None:
        shown["url"] = redact_url(entry.url)
    if entry.headers:
        shown["headers"] = {k: redact_value(v) for k, v in entry.headers.items()}
    unresolved = sorted(
        {m.group(0) for v in _template_values(entry) for m in _VARIABLE.finditer(v)}
    )
    if unresolved:
        shown["variables"] = unresolved
    return shown


def _template_values(entry: ServerEntry) -> Iterator[str]:
    yield from (entry.command or "", *entry.args, entry.url or "", entry.cwd or "")
    yield from entry.env.values()
    yield from entry.headers.values()
