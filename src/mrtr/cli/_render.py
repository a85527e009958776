"""What a command prints: text for people, one JSON document, the bare result, or events.

stdout carries only the result; prompts, progress, round lines and errors go to stderr.
Modes: ``text`` (content rendered, images and blobs summarised), ``json`` (always exactly
one document, on success and on failure, with the rounds and the wire result), ``result``
(the bare wire result), ``content`` (only the text of the content blocks) and ``jsonl``
(events streamed one per line, then the final document).
"""

from __future__ import annotations

import base64
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

from mrtr.cli._exit import NAMES, OK, TOOL_ERROR
from mrtr.cli._safe import json_text, sanitize, sanitize_surrogates, say
from mrtr.cli._terminal import Terminal

__all__ = ["MODES", "Output", "content_text", "render_blocks"]

MODES = ("text", "json", "result", "content", "jsonl")
RESULT_FORMAT = "mrtr.result/1"


def _size(block: Mapping[str, Any], key: str) -> str:
    data = block.get(key)
    if not isinstance(data, str):
        return "?"
    try:
        raw = len(base64.b64decode(data, validate=False))
    except ValueError:
        raw = len(data)
    return f"{raw / 1024:.0f} KB" if raw >= 1024 else f"{raw} B"


def _render_block(block: Mapping[str, Any]) -> str:
    kind = block.get("type")
    if kind == "text":
        return sanitize(str(block.get("text", "")), limit=1_000_000)
    if kind in ("image", "audio"):
        return f"[{kind} {block.get('mimeType', '?')} {_size(block, 'data')}]"
    if kind == "resource_link":
        return f"[resource {sanitize(str(block.get('uri')), multiline=False)}]"
    if kind == "resource":
        inner = block.get("resource") or {}
        if "text" in inner:
            return sanitize(str(inner["text"]), limit=1_000_000)
        return f"[blob {inner.get('mimeType', '?')} {_size(inner, 'blob')} {inner.get('uri', '')}]"
    return f"[{sanitize(str(kind), multiline=False)} content]"


def render_blocks(blocks: Sequence[Any]) -> str:
    """Content blocks as text: text as is, media and blobs as a one-line summary."""
    return "\n".join(_render_block(b) for b in blocks if isinstance(b, dict))


def content_text(blocks: Sequence[Any]) -> str:
    """Only the text of the content blocks (for pipes)."""
    texts = []
    for block in blocks:
        if isinstance(block, dict) and block.get("type") == "text":
            texts.append(str(block.get("text", "")))
        elif isinstance(block, dict) and block.get("type") == "resource":
            inner = block.get("resource") or {}
            if "text" in inner:
                texts.append(str(inner["text"]))
    return "\n".join(texts)


def result_text(method: str, result: Mapping[str, Any], *, only_text: bool = False) -> str:
    """A call's wire result as text (tool content, prompt messages, resource contents)."""
    if method == "prompts/get":
        if only_text:
            return content_text([m.get("content") for m in result.get("messages") or []])
        lines = [f"{m.get('role')}: {render_blocks([m.get('content')])}"
                 for m in result.get("messages") or []]  # fmt: skip
        return "\n".join(lines)
    if method == "resources/read":
        blocks = [{"type": "resource", "resource": c} for c in result.get("contents") or []]
        return content_text(blocks) if only_text else render_blocks(blocks)
    blocks = result.get("content") or []
    if only_text:
        return content_text(blocks)
    text = render_blocks(blocks)
    if not text and result.get("structuredContent") is not None:
        text = json_text(result["structuredContent"], indent=2)
    return text


def describe_request(request: Mapping[str, Any]) -> str:
    """One line saying what an unanswered input request asked (server text sanitised)."""
    params = request.get("params") or {}
    method = str(request.get("method"))
    parts = [method]
    if params.get("message"):
        parts.append(repr(sanitize(str(params["message"]), multiline=False, limit=200)))
    if params.get("mode") == "url":
        parts.append(f"url {sanitize(str(params.get('url')), multiline=False)}")
    fields = (params.get("requestedSchema") or {}).get("properties")
    if fields:
        parts.append(f"fields: {', '.join(sanitize(str(f), multiline=False) for f in fields)}")
    return " ".join(parts)


@dataclass(slots=True)
class Output:
    """Collects a command's rounds and events and prints its outcome in the chosen mode."""

    mode: str = "text"
    terminal: Terminal | None = None
    verbose: int = 0
    stdout: IO[str] = field(default_factory=lambda: sys.stdout)
    stderr: IO[str] = field(default_factory=lambda: sys.stderr)
    rounds: list[dict[str, Any]] = field(default_factory=list)
    header: dict[str, Any] = field(default_factory=dict)

    def event(self, event: Mapping[str, Any]) -> None:
        """One streamed event (printed only with ``-o jsonl``)."""
        if self.mode == "jsonl":
            print(json_text(event), file=self.stdout, flush=True)

    def round(self, event: Any) -> None:
        """A finished round (a `RoundEvent`): recorded, and shown as -v asks."""
        asked = ", ".join(f"{k} ({m})" for k, m in zip(event.keys, event.kinds, strict=True))
        record = {
            "round": event.round,
            "keys": list(event.keys),
            "kinds": list(event.kinds),
            "stateBytes": event.request_state_size,
            "ms": {
                "answer": round(event.callback_seconds * 1000, 1),
                "wait": round(event.wait_seconds * 1000, 1),
                "wire": round(event.wire_seconds * 1000, 1),
            },
            "outcome": event.outcome,
        }
        self.rounds.append(record)
        self.event({"event": "round", **record})
        line = f"round {event.round}: asked [{asked or 'nothing: state only'}] -> {event.outcome}"
        if self.verbose:
            self.note(line)
        elif self.terminal is not None:
            info = self.header.get("server", {}).get("serverInfo") or {}
            self.terminal.status(f"⠋ {info.get('name') or self.header.get('label', '')} · {line}")

    def progress(self, progress: float, total: float | None, message: str | None) -> None:
        """A progress notification: a status line on a terminal, an event with jsonl."""
        self.event({"event": "progress", "progress": progress, "total": total,
                    "message": message})  # fmt: skip
        if self.terminal is not None:
            if total:
                done = max(0, min(10, int(10 * progress / total)))
                bar = f"[{'#' * done}{' ' * (10 - done)}] {100 * progress / total:.0f}%"
            else:
                bar = f"{progress:g}"
            self.terminal.status(f"{bar} {sanitize(message or '', multiline=False)}")
        elif self.verbose:
            self.note(
                f"progress {progress:g}/{total if total is not None else '?'} {message or ''}"
            )

    def note(self, text: str) -> None:
        """A line for the person, on stderr."""
        if self.terminal is not None:
            self.terminal.write(text + "\n")
        else:
            say(text, file=self.stderr)

    def document(self, status: str, code: int, **parts: Any) -> dict[str, Any]:
        """The one JSON document of ``--json`` (and the last line of ``-o jsonl``)."""
        doc: dict[str, Any] = {"format": RESULT_FORMAT, "status": status, **self.header}
        doc.pop("label", None)
        if not doc.get("answers"):
            doc.pop("answers", None)
        if self.rounds:
            doc["rounds"] = self.rounds
        doc.update(parts)
        doc["exit"] = code
        return doc

    def success(self, result: Any, text: str, *, code: int = OK, only_text: str = "") -> int:
        """Print a finished command's result; returns its exit code."""
        if self.terminal is not None:
            self.terminal.clear_status()
        status = "complete" if code in (OK, TOOL_ERROR) else NAMES[code]
        if self.mode in ("json", "jsonl"):
            doc = self.document(status, code, result=result)
            indent = 2 if self.mode == "json" else None
            print(json_text(doc, indent=indent), file=self.stdout)
        elif self.mode == "result":
            print(json_text(result, indent=2), file=self.stdout)
        elif self.mode == "content":
            if only_text:
                self._print_text(only_text)
        elif text:
            say(text, file=self.stdout)
        if code == TOOL_ERROR and self.mode != "json":
            say("mrtr: the tool reported an error (isError)", file=self.stderr)
        self.stdout.flush()
        return code

    def failure(self, code: int, message: str, **parts: Any) -> int:
        """Print a failed command: one document with ``--json``, a line on stderr otherwise."""
        if self.terminal is not None:
            self.terminal.clear_status()
        status = "input_required" if "pending" in parts else "error"
        error = {"exit": code, "kind": NAMES.get(code, "internal"), "message": message,
                 **parts.pop("error", {})}  # fmt: skip
        if self.mode in ("json", "jsonl"):
            doc = self.document(status, code, error=error, **parts)
            indent = 2 if self.mode == "json" else None
            print(json_text(doc, indent=indent), file=self.stdout)
            self.stdout.flush()
            print(json_text({"error": error}), file=self.stderr)
        else:
            say(f"mrtr: {message}", file=self.stderr)
            for key, request in (parts.get("pending") or {}).get("inputRequests", {}).items():
                say(f"  {key}: {describe_request(request)}", file=self.stderr)
        return code

    def _print_text(self, text: str) -> None:
        """``-o content``: made safe on a terminal; exact (but encodable) into a pipe."""
        if self.stdout.isatty():
            say(text, file=self.stdout)
        else:
            print(sanitize_surrogates(text), file=self.stdout)
