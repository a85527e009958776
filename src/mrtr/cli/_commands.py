"""The server commands: info, list, call, read, prompt, ping (and servers, which needs none).

Each command resolves its TARGET, connects through `connect`, does one thing with the
public `Client` API, and hands its result to `Output`. Errors are not caught here: the
entry point maps them to exit codes in one place.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mrtr.cli._exit import OK, TOOL_ERROR, InputUnansweredError, UsageError
from mrtr.cli._pause import check_can_pause
from mrtr.cli._render import Output, result_text
from mrtr.cli._safe import json_text, say
from mrtr.errors import MCPError, NotInThisEraError, TaskInputRequiredError

if TYPE_CHECKING:
    from mrtr.cli._answering import Answerer
    from mrtr.cli._connect import ServerStderr
    from mrtr.cli._targets import Target
    from mrtr.client import Client
    from mrtr.types import Prompt, Tool

__all__ = ["Context", "list_servers", "run_server_command"]

LIST_KINDS = ("tools", "prompts", "resources", "templates")
METHOD_NOT_FOUND = -32601


def _pairs(words: list[str], flag: str) -> dict[str, str]:
    found = {}
    for word in words:
        key, sep, value = word.partition("=")
        if not sep or not key:
            raise UsageError(f"{flag} expects KEY=VALUE, got {word!r}")
        found[key] = value
    return found


@dataclass(slots=True)
class Context:
    """What one server command works with."""

    opts: argparse.Namespace
    server_command: list[str]
    output: Output
    answerer: Answerer | None = None
    sink: ServerStderr | None = None
    target: Target | None = None
    transport: Any = None

    def resolve(self, words: list[str]) -> list[str]:
        """Resolve the TARGET from the words (unless the server came after ``--``)."""
        from mrtr.cli._targets import config_files, default_expander, resolve_target

        opts = self.opts
        target_word = None if self.server_command else (words[0] if words else None)
        rest = words if self.server_command else words[1:]
        asking = self.output.terminal is not None
        expander = default_expander(
            _pairs(opts.input, "--input"),
            ask_input=self._ask_input if asking else None,
            trust_project=opts.trust_project,
            consent=self._consent if asking else None,
        )
        self.target = resolve_target(
            target_word,
            self.server_command,
            configs=config_files(opts.config, discover=not opts.no_discover),
            expander=expander,
            headers=opts.header,
            env={k: expander(v, f"-e {k}") for k, v in _pairs(opts.env, "-e").items()},
            cwd=opts.cwd,
        )
        self.output.header["label"] = self.target.label
        self.output.header["server"] = self.target.describe()
        for note in self.target.notes:
            self.output.note(f"mrtr: {note}")
        return rest

    def _consent(self, entry: Any, names: list[str]) -> bool:
        """Ask before a project file's server gets the person's environment variables."""
        terminal = self.output.terminal
        assert terminal is not None
        wanted = ", ".join(f"${{{n}}}" for n in names)
        terminal.write(
            f"the project file {entry.path} (in this directory, not your own config) wants"
            f" {wanted} for its server {entry.name!r}\n"
        )
        answer = terminal.read_line("  give it these values? [y/N] > ").strip().lower()
        return answer in ("y", "yes")

    def _ask_input(self, ident: str, spec: Mapping[str, Any]) -> str | None:
        """Ask the person for a VS Code ``${input:ID}`` (a password without echo)."""
        from mrtr.cli._terminal import sanitize

        terminal = self.output.terminal
        assert terminal is not None
        label = sanitize(str(spec.get("description") or ident), multiline=False)
        prompt = f"{label} (${{input:{ident}}})"
        if spec.get("password"):
            import getpass

            return getpass.getpass(f"{prompt}: ", stream=sys.stderr) or None
        options = spec.get("options")
        if isinstance(options, list) and options:
            from mrtr.cli._forms import parse_field

            listing = "".join(f"  {i}) {sanitize(str(o))}\n" for i, o in enumerate(options, 1))
            terminal.write(f"{prompt}\n{listing}")
            text = terminal.read_line("> ").strip()
            if not text:
                return None
            try:
                return str(parse_field(text, {"enum": [str(o) for o in options]}))
            except ValueError as exc:
                raise UsageError(f"${{input:{ident}}}: {exc}") from None
        return terminal.read_line(f"{prompt} > ").strip() or None

    def client(self, mode: str | None = None, **extra: Any) -> Any:
        """An async context manager opening the client on the resolved target.

        `extra` goes to the `Client` as it is (``tasks``, ``on_task``, ...).
        """
        from mrtr.cli._connect import ServerStderr, connect

        assert self.target is not None
        self.sink = ServerStderr(passthrough=self.opts.server_stderr or self.opts.verbose >= 2)
        return connect(self.target, self.opts, answerer=self.answerer, output=self.output,
                       sink=self.sink, mode=mode, on_transport=self._keep,
                       extra=extra)  # fmt: skip

    def _keep(self, transport: Any) -> None:
        self.transport = getattr(transport, "inner", transport)  # under --trace's wrapper


def connected(ctx: Context, client: Client) -> None:
    """Record who answered the handshake (for the output and the prompts' headers)."""
    server = ctx.output.header["server"]
    server["protocolVersion"] = client.protocol_version
    info = client.server_info
    if info is not None:
        server["serverInfo"] = info.to_wire()
        if ctx.answerer is not None and info.name:
            ctx.answerer.server = info.name


async def cmd_info(ctx: Context, words: list[str]) -> int:
    """Show the server: era, negotiated version, identity, capabilities."""
    if ctx.resolve(words):
        raise UsageError("info takes only a TARGET")
    async with ctx.client() as client:
        connected(ctx, client)
        from mrtr.types import MODERN_PROTOCOL_VERSIONS

        version = client.protocol_version
        data = {
            "protocolVersion": version,
            "era": "2026-07-28" if version in MODERN_PROTOCOL_VERSIONS else "legacy",
            "serverInfo": client.server_info.to_wire() if client.server_info else None,
            "capabilities": client.server_capabilities.to_wire(),
        }
    from mrtr.cli._terminal import sanitize

    info = data["serverInfo"] or {}
    who = f"{info.get('name', '?')} {info.get('version', '')}".rstrip()
    lines = [
        f"server:       {sanitize(who, multiline=False)}",
        f"protocol:     {version}" + (" (legacy era)" if data["era"] == "legacy" else ""),
        f"capabilities: {sanitize(', '.join(sorted(data['capabilities'])) or 'none')}",
    ]
    return ctx.output.success(data, "\n".join(lines))


def _tool_line(tool: dict[str, Any]) -> str:
    from mrtr.cli._coerce import signature
    from mrtr.cli._terminal import sanitize

    line = signature(tool["name"], tool.get("inputSchema") or {})
    summary = (tool.get("description") or "").strip().splitlines()
    return sanitize(line + (f"\n    {summary[0]}" if summary else ""))


def _item_line(kind: str, item: dict[str, Any]) -> str:
    from mrtr.cli._terminal import sanitize

    if kind == "tools":
        return _tool_line(item)
    if kind == "prompts":
        names = ", ".join(
            a["name"] + ("" if a.get("required") else "?") for a in item.get("arguments") or []
        )
        text = f"{item['name']}({names})"
    elif kind == "resources":
        text = f"{item['uri']}  {item.get('name', '')}  {item.get('mimeType', '')}".rstrip()
    else:
        text = f"{item['uriTemplate']}  {item.get('name', '')}".rstrip()
    summary = (item.get("description") or "").strip().splitlines()
    return sanitize(text + (f"\n    {summary[0]}" if summary else ""))


async def _walk(client: Client, kind: str, declared: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every item of one list; none (not an error) when the server has no such list."""
    walks: dict[str, Callable[[], Any]] = {
        "tools": client.iter_tools,
        "prompts": client.iter_prompts,
        "resources": client.iter_resources,
        "templates": client.iter_resource_templates,
    }
    if ("resources" if kind == "templates" else kind) not in declared:
        return []  # the server has none: asking would only get -32601
    try:
        return [item.to_wire() async for item in walks[kind]()]
    except MCPError as exc:
        if exc.code != METHOD_NOT_FOUND:
            raise
        return []


async def cmd_list(ctx: Context, words: list[str]) -> int:
    """List the server's tools (or prompts, resources, templates) as signatures."""
    rest = ctx.resolve(words)
    kinds = rest or ["tools"]
    every = kinds == ["all"]
    if every:
        kinds = list(LIST_KINDS)
    for kind in kinds:
        if kind not in LIST_KINDS:
            raise UsageError(f"list what? one of {', '.join(LIST_KINDS)} or all, not {kind!r}")
    async with ctx.client() as client:
        connected(ctx, client)
        declared = client.server_capabilities.to_wire()
        if every:  # only what the server declared; a missing optional list is no failure
            kinds = [k for k in kinds if ("resources" if k == "templates" else k) in declared]
        found = {kind: await _walk(client, kind, declared) for kind in kinds}
    lines = []
    names = []
    for kind in kinds:
        if len(kinds) > 1:
            lines.append(f"{kind}:")
        lines += [_item_line(kind, item) for item in found[kind]] or [f"(no {kind})"]
        names += [str(item.get("name") or item.get("uri") or item.get("uriTemplate"))
                  for item in found[kind]]  # fmt: skip
    return ctx.output.success(found, "\n".join(lines), only_text="\n".join(names))


async def cmd_ping(ctx: Context, words: list[str]) -> int:
    """Ping the server and show the round trip."""
    if ctx.resolve(words):
        raise UsageError("ping takes only a TARGET")
    async with ctx.client() as client:
        connected(ctx, client)
        method = "ping"
        started = time.perf_counter()
        try:
            await client.send_ping()
        except (NotInThisEraError, MCPError) as exc:
            # 2026-07-28 has no ping (the client says so before sending; a server of that
            # era answers -32601): a list request is the cheapest round trip it has
            if isinstance(exc, MCPError) and exc.code != METHOD_NOT_FOUND:
                raise
            method = "tools/list"
            started = time.perf_counter()
            await client.list_tools()
        elapsed = (time.perf_counter() - started) * 1000
    data = {"ms": round(elapsed, 2), "method": method}
    label = ctx.output.header["label"]
    return ctx.output.success(data, f"{label} answered {method} in {elapsed:.1f} ms")


async def _find_tool(client: Client, name: str) -> dict[str, Any]:
    return await _find("tool", client.iter_tools(), name)


async def _find(kind: str, listing: AsyncIterator[Tool | Prompt], name: str) -> dict[str, Any]:
    """The listed tool or prompt called `name`, as wire data; else the nearest names.

    Raises:
        UsageError: the server lists none by that name.
    """
    import difflib

    names = []
    async for item in listing:
        if item.name == name:
            wire: dict[str, Any] = item.to_wire()
            return wire
        names.append(item.name)
    close = difflib.get_close_matches(name, names, n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else f"; {kind}s: {', '.join(names)}"
    raise UsageError(f"the server has no {kind} {name!r}{hint}")


async def cmd_call(ctx: Context, words: list[str]) -> int:
    """Call a tool and drive every round of input it asks for."""
    from mrtr.cli._coerce import build_arguments, load_args_option, schema_help

    opts = ctx.opts
    rest = ctx.resolve(words)
    if not rest:
        raise UsageError("call needs a TOOL (mrtr list TARGET shows them)")
    tool, pairs = rest[0], rest[1:]
    extra: dict[str, Any] = {}
    if opts.task or opts.task_file:
        from mrtr.cli._task import task_watcher

        if opts.task_file and opts.task_file != "-":
            from mrtr.cli._answers import check_writable

            check_writable(opts.task_file, "--task-file")
        extra = {"tasks": True, "on_task": task_watcher(ctx)}
        if opts.task_file and ctx.answerer is not None and opts.unanswered is None:
            ctx.answerer.task_questions_wait = True  # a task's unanswered question waits
    async with ctx.client(**extra) as client:
        connected(ctx, client)
        if opts.tool_help:
            found = await _find_tool(client, tool)
            say(
                schema_help(tool, found.get("description"), found.get("inputSchema") or {}),
                file=sys.stdout,
            )
            return OK
        schema = None if opts.no_validate else (await _find_tool(client, tool)).get("inputSchema")
        base = load_args_option(opts.args)
        arguments, warnings = build_arguments(
            tool, schema, pairs, base, validate=schema is not None
        )
        for warning in warnings:
            ctx.output.note(f"mrtr: warning: {warning}")
        ctx.output.header["call"] = {"method": "tools/call", "name": tool, "arguments": arguments}
        check_can_pause(ctx, client.protocol_version)
        run = client.pause_call_tool if ctx.opts.pause else client.call_tool
        try:
            result = await run(tool, arguments, progress_callback=progress_to(ctx.output))
        except TaskInputRequiredError as exc:
            from mrtr.cli._task import task_waits

            return task_waits(ctx, opts.task_file, exc.task)
    return finish_call(ctx, "tools/call", result)


async def _find_prompt(client: Client, name: str) -> dict[str, Any]:
    return await _find("prompt", client.iter_prompts(), name)


def prompt_signature(prompt: Mapping[str, Any]) -> str:
    """``name(who, style?)``: a prompt's arguments at a glance."""
    arguments = prompt.get("arguments") or []
    names = [str(a.get("name")) + ("" if a.get("required") else "?") for a in arguments]
    return f"{prompt.get('name')}({', '.join(names)})"


def _prompt_help(prompt: Mapping[str, Any]) -> str:
    lines = [f"usage: mrtr prompt TARGET {prompt.get('name')} [KEY=VALUE ...]", ""]
    if prompt.get("description"):
        lines += [str(prompt["description"]).strip(), ""]
    arguments = prompt.get("arguments") or []
    lines.append("arguments:" if arguments else "arguments: none")
    for argument in arguments:
        need = "required" if argument.get("required") else "optional"
        lines.append(f"  {argument.get('name')}  ({need})")
        if argument.get("description"):
            lines.append(f"      {argument['description']}")
    return "\n".join(lines)


def _check_prompt_arguments(prompt: Mapping[str, Any], arguments: Mapping[str, str]) -> list[str]:
    """Missing required arguments are a usage error; unknown ones a warning (returned)."""
    declared = {str(a.get("name")): a for a in prompt.get("arguments") or []}
    missing = [n for n, a in declared.items() if a.get("required") and n not in arguments]
    sig = prompt_signature(prompt)
    if missing:
        raise UsageError(f"missing required argument(s): {', '.join(missing)}", details=sig)
    return [f"{k!r} is not an argument of {sig}" for k in arguments if k not in declared]


async def cmd_prompt(ctx: Context, words: list[str]) -> int:
    """Get a prompt (its arguments are strings), answering every round."""
    rest = ctx.resolve(words)
    if not rest:
        raise UsageError("prompt needs a NAME (mrtr list TARGET prompts shows them)")
    name, arguments = rest[0], _pairs(rest[1:], "prompt arguments")
    ctx.output.header["call"] = {"method": "prompts/get", "name": name, "arguments": arguments}
    async with ctx.client() as client:
        connected(ctx, client)
        if ctx.opts.tool_help or not ctx.opts.no_validate:
            found = await _find_prompt(client, name)
            if ctx.opts.tool_help:
                say(_prompt_help(found), file=sys.stdout)
                return OK
            for warning in _check_prompt_arguments(found, arguments):
                ctx.output.note(f"mrtr: warning: {warning}")
        check_can_pause(ctx, client.protocol_version)
        run = client.pause_get_prompt if ctx.opts.pause else client.get_prompt
        result = await run(name, arguments, progress_callback=progress_to(ctx.output))
    return finish_call(ctx, "prompts/get", result)


async def cmd_read(ctx: Context, words: list[str]) -> int:
    """Read a resource, answering every round."""
    rest = ctx.resolve(words)
    if len(rest) != 1:
        raise UsageError("read needs exactly one URI")
    ctx.output.header["call"] = {"method": "resources/read", "name": rest[0]}
    async with ctx.client() as client:
        connected(ctx, client)
        check_can_pause(ctx, client.protocol_version)
        run = client.pause_read_resource if ctx.opts.pause else client.read_resource
        result = await run(rest[0], progress_callback=progress_to(ctx.output))
    return finish_call(ctx, "resources/read", result)


def progress_to(output: Output) -> Any:
    async def progress(value: float, total: float | None, message: str | None) -> None:
        output.progress(value, total, message)

    return progress


def finish_call(ctx: Context, method: str, result: Any) -> int:
    """Print a call's terminal result, or write the paused call; returns the exit code."""
    from mrtr import PausedCall
    from mrtr.cli._pause import pause_to_file

    if isinstance(result, PausedCall):
        return pause_to_file(ctx, result)
    wire = result.to_wire()
    error = bool(getattr(result, "is_error", False))
    answerer = ctx.answerer
    if answerer is not None and answerer.failure is not None:
        raise answerer.failure
    if answerer is not None and answerer.unanswered:
        keys = ", ".join(answerer.unanswered)
        raise InputUnansweredError(
            f"the server asked for input nobody answered ({keys}); it got a refusal",
            pending=answerer.unanswered,
        )
    if answerer is not None and answerer.recorder is not None:
        answerer.recorder.write()
    if answerer is not None:
        for left in answerer.book.unmatched():
            ctx.output.note(
                f"mrtr: warning: {left}: no input request had this key; it was not used"
            )
    text = result_text(method, wire)
    only = result_text(method, wire, only_text=True)
    if ctx.output.mode == "content" and not only:
        summary = " ".join(text.split()) if text else "nothing"
        ctx.output.note(
            f"mrtr: the result holds no text ({summary[:200]}); -o result shows all of it"
        )
    return ctx.output.success(wire, text, code=TOOL_ERROR if error else OK, only_text=only)


async def cmd_resume(ctx: Context, words: list[str]) -> int:
    """Finish a paused call (see `mrtr.cli._pause`)."""
    from mrtr.cli._pause import cmd_resume as resume

    return await resume(ctx, words)


async def cmd_task(ctx: Context, words: list[str]) -> int:
    """Follow a task saved by ``call --task-file`` (see `mrtr.cli._task`)."""
    from mrtr.cli._task import cmd_task as task

    return await task(ctx, words)


async def cmd_login(ctx: Context, words: list[str]) -> int:
    """Log in with OAuth (see `mrtr.cli._auth`)."""
    from mrtr.cli._auth import cmd_login as login

    return await login(ctx, words)


async def cmd_logout(ctx: Context, words: list[str]) -> int:
    """Forget the OAuth tokens of a server."""
    from mrtr.cli._auth import cmd_logout as logout

    return await logout(ctx, words)


COMMANDS = {
    "info": cmd_info,
    "list": cmd_list,
    "call": cmd_call,
    "read": cmd_read,
    "prompt": cmd_prompt,
    "ping": cmd_ping,
    "resume": cmd_resume,
    "task": cmd_task,
    "login": cmd_login,
    "logout": cmd_logout,
}


async def run_server_command(ctx: Context) -> int:
    """Run the command named in the options."""
    handler = COMMANDS[ctx.opts.command]
    return await handler(ctx, list(ctx.opts.words))


def list_servers(opts: argparse.Namespace) -> int:
    """``mrtr servers``: every configured server, its file, secrets redacted (no network)."""
    from mrtr.cli._config import load_entries, redacted
    from mrtr.cli._targets import config_files

    shown: list[dict[str, Any]] = []
    problems: list[str] = []
    for config in config_files(opts.config, discover=not opts.no_discover):
        try:
            shown += [redacted(e) for e in load_entries(config)]
        except UsageError as exc:
            problems.append(str(exc))
    for problem in problems:
        say(f"mrtr: warning: {problem}", file=sys.stderr)
    if opts.output == "json":
        doc = {"format": "mrtr.servers/1", "servers": shown, "problems": problems}
        print(json_text(doc, indent=2))
        return OK
    if not shown:
        say("no servers configured (looked in the project and user config files)", file=sys.stdout)
        return OK
    home = os.path.expanduser("~")
    for entry in shown:
        where = entry.get("url") or " ".join([entry.get("command", ""), *entry.get("args", [])])
        path = (
            entry["file"].replace(home, "~", 1) if entry["file"].startswith(home) else entry["file"]
        )
        lines = [
            f"{entry['source']}:{entry['name']}  ({entry['transport']})  {where}",
            f"    {path}"
            + ("  (a project file: this directory's)" if entry.get("projectFile") else ""),
        ]
        for part in ("env", "headers"):
            for key, value in (entry.get(part) or {}).items():
                lines.append(f"    {part[:-1] if part == 'headers' else part} {key}={value}")
        say("\n".join(lines), file=sys.stdout)
    return OK
