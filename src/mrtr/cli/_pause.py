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
import re
import shlex
import sys
from typing import TYPE_CHECKING, Any

from mrtr.cli._answers import read_saved, write_private
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

__all__ = ["check_can_pause", "cmd_resume", "pause_meta", "pause_to_file", "target_words"]

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


def pause_meta(target: Target, opts: argparse.Namespace) -> dict[str, Any]:
    """How to reach the server again, for a saved file's ``meta`` (names, never values)."""
    headers = [h.partition(":")[0].strip() for h in opts.header]
    env = [e.partition("=")[0] for e in opts.env]
    return {META_KEY: {"server": target.describe(), "headers": headers, "env": env}}


def _params(request: Any) -> dict[str, Any]:
    params = getattr(request, "params", None)
    return {} if params is None else dict(params.to_wire())


def resume_command(path: str, paused: PausedCall) -> str:
    """The exact command that finishes a paused call (values to fill in marked ``…``)."""
    from mrtr.cli._answers import answer_hint

    info = (paused.meta or {}).get(META_KEY) or {}
    words = ["mrtr", "resume", path]
    for key in paused.missing:
        request = paused.requests[key]
        words += answer_hint(key, request.method, _params(request))
    words += [arg for name in info.get("headers", []) for arg in ("-H", f"{name}: …")]
    words += [arg for name in info.get("env", []) for arg in ("-e", f"{name}=…")]
    return " ".join(shlex.quote(w) if w != "…" and "…" not in w else w for w in words)


def pause_to_file(ctx: Context, paused: PausedCall) -> int:
    """Write the paused call (mode 0600), say how to resume it; exit 6."""
    assert ctx.target is not None
    meta = dict(paused.meta or {})
    meta.setdefault(META_KEY, pause_meta(ctx.target, ctx.opts)[META_KEY])
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
    target = ctx.target
    if target.transport == "stdio" and target.label != "demo":
        ctx.output.note(
            "mrtr: warning: this server runs over stdio, so resuming starts it afresh; unless it"
            " seals its requestState with a key that outlives the process, it will refuse the"
            " paused state (exit 10)"
        )
    if ctx.output.mode not in ("json", "jsonl") or path != "-":
        ctx.output.failure(INPUT_REQUIRED, message, pending=pending)
    if ctx.output.mode not in ("json", "jsonl"):
        say(f"resume with: {hint}", file=sys.stderr)
    return INPUT_REQUIRED


def _load(path: str) -> PausedCall:
    from mrtr import PausedCall
    from mrtr.errors import PausedCallFormatError

    return read_saved(path, PausedCall.from_json, PausedCallFormatError, "a paused call")


def target_words(ctx: Context, meta: Any, rest: list[str]) -> list[str]:
    """The TARGET to resolve: given again, or the one recorded in a saved file's `meta`."""
    if rest or ctx.server_command:
        return rest
    server = ((meta or {}).get(META_KEY) or {}).get("server") or {}
    if server.get("url"):
        if REDACTED in str(server["url"]):
            raise UsageError("the saved server URL held a secret; give the TARGET URL again")
        return [str(server["url"])]
    command = server.get("command")
    if server.get("target") and server.get("target") != " ".join(command or []):
        return [str(server["target"])]
    if command:
        if any(REDACTED in str(word) for word in command):
            raise UsageError("the saved server command had a secret; give it again after --")
        ctx.server_command = [str(word) for word in command]
        return []
    raise UsageError("the saved file does not say which server; give TARGET or -- COMMAND")


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


def _open(ctx: Context, words: list[str]) -> tuple[str, PausedCall]:
    """The pause file named by the words, checked: readable, not finished, not expired.

    Raises:
        UsageError, AlreadyFinishedError, RestartNeededError: it cannot be resumed.
    """
    if not words:
        raise UsageError("resume needs the paused FILE")
    if ctx.opts.mode == "legacy":
        raise UsageError("only a 2026-07-28 call can be resumed; --mode legacy cannot")
    path = words[0]
    paused = _load(path)
    _refuse_finished(path, paused, force=ctx.opts.force)
    if paused.is_expired():
        raise RestartNeededError(
            f"{path}: the paused call expired at {_when(paused.expires_at)}; start over with:"
            f" {_restart_command(ctx, paused)}"
        )
    return path, paused


async def cmd_resume(ctx: Context, words: list[str]) -> int:
    """``mrtr resume FILE``: answer what is missing, reconnect, send the retry."""
    from mrtr import PausedCall
    from mrtr.cli._commands import connected, finish_call, progress_to

    path, paused = _open(ctx, words)
    if not ctx.opts.pause:
        ctx.opts.pause = path  # pausing again rewrites the same file
    if ctx.answerer is not None:
        ctx.answerer.policy = "pause"
    ctx.resolve(target_words(ctx, paused.meta, words[1:]))
    _check_given_again(ctx, paused)
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
            _explain_restart(ctx, exc, paused)
            raise
    if isinstance(result, PausedCall):
        return pause_to_file(ctx, result)
    code = finish_call(ctx, paused.method, result)
    _mark_finished(path, paused, result.to_wire(), code)
    return code


def _when(epoch: float) -> str:
    """An epoch time as a readable UTC time."""
    import datetime

    try:
        moment = datetime.datetime.fromtimestamp(epoch, tz=datetime.timezone.utc)
    except (OverflowError, OSError, ValueError):
        return f"{epoch:g} (epoch seconds)"
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def _refuse_finished(path: str, paused: PausedCall, *, force: bool) -> None:
    """A call that already finished is never sent again unless --force says so.

    Raises:
        AlreadyFinishedError: the file records a finished call.
    """
    finished = ((paused.meta or {}).get(META_KEY) or {}).get("finished")
    if not isinstance(finished, dict) or force:
        return
    from mrtr.cli._exit import AlreadyFinishedError

    raise AlreadyFinishedError(
        f"{path}: this call already finished ({finished.get('at', '?')}, exit"
        f" {finished.get('exit', '?')}); its result is kept in the file. Resuming would send"
        " the retry again and the server could run the tool twice; --force does it anyway",
        result=finished.get("result"),
    )


def _mark_finished(path: str, paused: PausedCall, result: Any, code: int) -> None:
    """Record in the pause file that the call finished, with its result (never resent)."""
    import datetime

    if path == "-":
        return
    meta = dict(paused.meta or {})
    info = dict(meta.get(META_KEY) or {})
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    info["finished"] = {"at": now, "exit": code, "result": result}
    meta[META_KEY] = info
    write_private(path, json.loads(paused.with_meta(meta).to_json()), flag="resume")


def _check_given_again(ctx: Context, paused: PausedCall) -> None:
    """Warn when the headers or environment the call was made with are not given again."""
    info = (paused.meta or {}).get(META_KEY) or {}
    target = ctx.target
    assert target is not None
    have_headers = {name.lower() for name in target.headers}
    missing = [
        f"-H '{n}: …'" for n in info.get("headers", []) if str(n).lower() not in have_headers
    ]
    missing += [f"-e {n}=…" for n in info.get("env", []) if n not in target.env]
    if missing:
        ctx.output.note(
            "mrtr: warning: the call was paused with "
            + ", ".join(missing)
            + "; give them again, or the server may refuse the retry"
        )


def _restart_command(ctx: Context, paused: PausedCall) -> str:
    """The command that starts the paused call over, with the recorded target."""
    verb = {"tools/call": "call", "prompts/get": "prompt", "resources/read": "read"}
    server = ((paused.meta or {}).get(META_KEY) or {}).get("server") or {}
    command = list(ctx.server_command) or (
        [str(w) for w in server.get("command") or []] if not server.get("url") else []
    )
    target = (
        None
        if command and server.get("target") in (None, " ".join(command))
        else (ctx.target.label if ctx.target is not None else server.get("target") or "TARGET")
    )
    again = ["mrtr", verb.get(paused.method, "call")] + ([str(target)] if target else [])
    again.append(paused.name)
    if paused.arguments:
        again += ["--args", json.dumps(dict(paused.arguments))]
    if not target and command:
        again += ["--", *command]
    return " ".join(shlex.quote(w) for w in again)


def _explain_restart(ctx: Context, exc: Exception, paused: PausedCall) -> None:
    """A refused state becomes exit 10 with the command that starts the call over.

    Raises:
        RestartNeededError: the paused call cannot go on.
    """
    from mrtr.errors import (
        PausedCallExpiredError,
        PausedCallMismatchError,
        RequestStateRejectedError,
    )

    if isinstance(exc, PausedCallExpiredError):
        reason = f"the paused call expired at {_when(exc.expires_at)}"
    elif isinstance(exc, RequestStateRejectedError):
        reason = f"the server refused the paused state ({exc.message})"
    elif isinstance(exc, PausedCallMismatchError):
        reason = _START_OVER.sub("", str(exc))
    else:
        return
    restart = _restart_command(ctx, paused)
    raise RestartNeededError(f"{reason}; start over with: {restart}") from exc


_START_OVER = re.compile(r"[;,.]?\s*(start (the call )?over|restart the call)[^;]*", re.I)
