"""``--pause FILE`` and ``mrtr resume FILE``: a call stopped at a round, finished later.

Only a 2026-07-28 call can pause (the server's state travels in ``requestState``; a legacy
server holds an open request on a live connection). The file is the library's
`PausedCall` JSON, mode 0600, with how to reach the server again in its ``meta`` (the
target, the names of the headers and environment variables to give again; never their
values). ``mrtr resume`` answers what is still missing (flags, answers file, terminal),
reconnects in the recorded era and sends the retry; it may pause again.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from typing import TYPE_CHECKING, Any

from mrtr.cli._answers import write_private
from mrtr.cli._config import REDACTED
from mrtr.cli._exit import (
    INPUT_REQUIRED,
    CLIError,
    InputUnansweredError,
    RestartNeededError,
    UsageError,
)
from mrtr.cli._safe import json_text, say

if TYPE_CHECKING:
    from mrtr import PausedCall
    from mrtr.cli._commands import Context
    from mrtr.cli._targets import Target

__all__ = ["check_can_pause", "cmd_resume", "pause_to_file"]

META_KEY = "mrtr.cli"


def check_can_pause(ctx: Context, protocol_version: str) -> None:
    """``--pause`` needs a 2026-07-28 connection.

    Raises:
        UsageError: the connection speaks the legacy era.
    """
    from mrtr.types import MODERN_PROTOCOL_VERSIONS

    if ctx.opts.pause and protocol_version not in MODERN_PROTOCOL_VERSIONS:
        raise UsageError(
            f"--pause needs the 2026-07-28 era; this server speaks {protocol_version} "
            "(a legacy server holds its request open on the connection)"
        )


def _meta(target: Target, opts: argparse.Namespace) -> dict[str, Any]:
    headers = [h.partition(":")[0].strip() for h in opts.header]
    env = [e.partition("=")[0] for e in opts.env]
    return {META_KEY: {"server": target.describe(), "headers": headers, "env": env}}


def _params(request: Any) -> dict[str, Any]:
    params = getattr(request, "params", None)
    return {} if params is None else dict(params.to_wire())


def resume_command(path: str, paused: PausedCall) -> str:
    """The exact command that finishes a paused call (values to fill in marked ``…``)."""
    info = (paused.meta or {}).get(META_KEY) or {}
    words = ["mrtr", "resume", path]
    for key in paused.missing:
        request = paused.requests[key]
        params = _params(request)
        fields = list((params.get("requestedSchema") or {}).get("properties") or {})
        if request.method == "elicitation/create" and params.get("mode") == "url":
            words += ["--accept", key]
        elif len(fields) == 1:
            words += ["--answer", f"{key}.{fields[0]}=…"]
        else:
            words += ["--answer", f"{key}=…"]
    words += [arg for name in info.get("headers", []) for arg in ("-H", f"{name}: …")]
    words += [arg for name in info.get("env", []) for arg in ("-e", f"{name}=…")]
    return " ".join(shlex.quote(w) if w != "…" and "…" not in w else w for w in words)


def pause_to_file(ctx: Context, paused: PausedCall) -> int:
    """Write the paused call (mode 0600), say how to resume it; exit 6."""
    assert ctx.target is not None
    meta = dict(paused.meta or {})
    meta.setdefault(META_KEY, _meta(ctx.target, ctx.opts)[META_KEY])
    paused = paused.with_meta(meta)
    path = ctx.opts.pause
    data = json.loads(paused.to_json())
    if path == "-":
        print(json_text(data, indent=2))
    else:
        write_private(path, data, flag="--pause")
    hint = resume_command(path, paused)
    pending = {
        "inputRequests": {key: paused.requests[key].to_wire() for key in paused.missing},
        "pauseFile": path,
        "resume": hint,
        "id": paused.id,
        "round": paused.round,
    }
    message = f"paused at round {paused.round}, waiting for {', '.join(paused.missing)}"
    if ctx.output.mode not in ("json", "jsonl") or path != "-":
        ctx.output.failure(INPUT_REQUIRED, message, pending=pending)
    if ctx.output.mode not in ("json", "jsonl"):
        say(f"resume with: {hint}", file=sys.stderr)
    return INPUT_REQUIRED


def _load(path: str) -> PausedCall:
    from mrtr import PausedCall
    from mrtr.errors import PausedCallFormatError

    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    try:
        return PausedCall.from_json(text)
    except PausedCallFormatError as exc:
        raise UsageError(f"{path}: not a paused call: {exc}") from None


def _target_words(ctx: Context, paused: PausedCall, rest: list[str]) -> list[str]:
    """The TARGET to resolve: given again, or the one recorded in the file."""
    if rest or ctx.server_command:
        return rest
    server = ((paused.meta or {}).get(META_KEY) or {}).get("server") or {}
    if server.get("url"):
        return [str(server["url"])]
    command = server.get("command")
    if server.get("target") and server.get("target") != " ".join(command or []):
        return [str(server["target"])]
    if command:
        if any(REDACTED in str(word) for word in command):
            raise UsageError("the paused server command had a secret; give it again after --")
        ctx.server_command = [str(word) for word in command]
        return []
    raise UsageError("the paused file does not say which server; give TARGET or -- COMMAND")


async def _answer_missing(ctx: Context, paused: PausedCall) -> PausedCall:
    from mrtr import PAUSE

    answerer = ctx.answerer
    assert answerer is not None
    for key in paused.missing:
        request = paused.requests[key]
        params = _params(request)
        response = await answerer.answer(key, paused.round, paused.name, request.method, params)
        if response is PAUSE:
            continue
        if answerer.unanswered:
            break
        paused = paused.answer(key, response)
    return paused


async def cmd_resume(ctx: Context, words: list[str]) -> int:
    """``mrtr resume FILE``: answer what is missing, reconnect, send the retry."""
    from mrtr import PausedCall
    from mrtr.cli._commands import connected, finish_call, progress_to

    if not words:
        raise UsageError("resume needs the paused FILE")
    if ctx.opts.mode == "legacy":
        raise UsageError("only a 2026-07-28 call can be resumed; --mode legacy cannot")
    path = words[0]
    paused = _load(path)
    if not ctx.opts.pause:
        ctx.opts.pause = path  # pausing again rewrites the same file
    if ctx.answerer is not None:
        ctx.answerer.policy = "pause"
    ctx.resolve(_target_words(ctx, paused, words[1:]))
    ctx.output.header["call"] = {"method": paused.method, "name": paused.name,
                                 "arguments": paused.arguments}  # fmt: skip
    paused = await _answer_missing(ctx, paused)
    if paused.missing:
        if ctx.answerer is not None and ctx.answerer.unanswered:
            raise InputUnansweredError(
                f"still unanswered: {', '.join(paused.missing)}",
                pending=ctx.answerer.unanswered,
            )
        return pause_to_file(ctx, paused)
    async with ctx.client(mode=paused.protocol_version) as client:
        connected(ctx, client)
        try:
            result = await client.resume(paused, progress_callback=progress_to(ctx.output))
        except CLIError:
            raise
        except Exception as exc:
            _explain_restart(exc, paused)
            raise
    if isinstance(result, PausedCall):
        return pause_to_file(ctx, result)
    return finish_call(ctx, paused.method, result)


def _explain_restart(exc: Exception, paused: PausedCall) -> None:
    """A refused state becomes exit 10 with the command that starts the call over.

    Raises:
        RestartNeededError: the paused call cannot go on.
    """
    from mrtr.errors import (
        PausedCallExpiredError,
        PausedCallMismatchError,
        RequestStateRejectedError,
    )

    if isinstance(
        exc, (RequestStateRejectedError, PausedCallExpiredError, PausedCallMismatchError)
    ):
        verb = {"tools/call": "call", "prompts/get": "prompt", "resources/read": "read"}
        again = ["mrtr", verb.get(paused.method, "call"), "TARGET", paused.name]
        if paused.arguments:
            again += ["--args", json.dumps(dict(paused.arguments))]
        restart = " ".join(shlex.quote(w) for w in again)
        raise RestartNeededError(f"{exc}; start over with: {restart}") from exc
