"""Asking a person on the terminal: elicitation forms, URL consent, sampling replies.

These functions block on the person, so they run in a worker thread (see `_answering`).
A form is asked field by field from its ``requestedSchema``: enums as numbered menus,
multi-select as comma-separated choices, booleans as ``[y/n]``, numbers and strings with
their bounds and formats; an empty line takes the default or skips an optional field; a
bad value is re-asked (3 times). A review step comes before a form of several fields is
sent (one answer, a menu pick or a value, is its own review), and a scalar question shows
its message and no synthetic field name. Commands start with ``!`` so they never collide
with a value: ``!decline``, ``!cancel``, ``!pause``. A URL is shown in full with its host
emphasised and opened only on a keypress.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from mrtr.cli._forms import choices, field_kind, parse_field, usable_pattern
from mrtr.cli._terminal import Terminal, sanitize

__all__ = ["PAUSE", "ask_form", "ask_sampling", "ask_url"]

PAUSE = "!pause"
"""Returned when the person asks to finish later."""

TRIES = 3
_COMMANDS = {"!decline": "decline", "!cancel": "cancel"}


NO_PAUSE = "  !pause needs --pause FILE (and a 2026-07-28 server); answer, or !decline / !cancel\n"


class _Stop(Exception):
    def __init__(self, outcome: Any) -> None:
        self.outcome = outcome


class _Reask(Exception):
    """The line was a command that cannot apply here: say why, ask again."""


def _command(text: str, can_pause: bool) -> None:
    word = text.strip().lower()
    if word in _COMMANDS:
        raise _Stop({"action": _COMMANDS[word]})
    if word == PAUSE:
        if can_pause:
            raise _Stop(PAUSE)
        raise _Reask(NO_PAUSE)


SCALAR_FIELD = "value"
"""The field a scalar question's form wraps its answer in (``Elicit("How many?", int)``)."""


def scalar_question(properties: Mapping[str, Any]) -> bool:
    """A form of one untitled ``value`` field: the question's message is all there is to say."""
    if list(properties) != [SCALAR_FIELD]:
        return False
    prop = properties[SCALAR_FIELD]
    return isinstance(prop, dict) and not prop.get("title")


def _field_prompt(term: Terminal, name: str, prop: Mapping[str, Any], required: bool) -> str:
    """The lines that ask for one field (``name`` empty: the message said it all)."""
    title = sanitize(str(prop.get("title") or name), multiline=False)
    lines = []
    if prop.get("description"):
        lines.append(term.style(f"  {sanitize(str(prop['description']))}", "2"))
    kind = field_kind(prop)
    options = choices(prop) if kind == "enum" else None
    if kind == "multi":
        options = choices(prop["items"])
    for index, option in enumerate(options or [], start=1):
        lines.append(f"  {index}) {sanitize(option.label, multiline=False)}")
    hint = {"boolean": " [y/n]", "multi": " (numbers, comma-separated)"}.get(kind, "")
    if kind in ("integer", "number"):
        bounds = [f">= {prop['minimum']}" if "minimum" in prop else "", ""]
        bounds[1] = f"<= {prop['maximum']}" if "maximum" in prop else ""
        shown = ", ".join(b for b in bounds if b)
        hint = f" ({kind}{', ' + shown if shown else ''})"
    elif kind == "string" and prop.get("format"):
        hint = f" ({prop['format']})"
    pattern = prop.get("pattern")
    if kind == "string" and isinstance(pattern, str) and not usable_pattern(pattern):
        lines.append("  (the server's pattern for this field is not a valid regex: not checked)")
    if "default" in prop:
        hint += f" [default {_default_label(prop, options)}]"
    elif not required:
        hint += " [optional]"
    if title:
        lines.append(f"{term.style(title, '1')}{hint} > ")
    else:
        lines.append(f"{hint.strip()} > ".lstrip())
    return "\n".join(lines)


def _default_label(prop: Mapping[str, Any], options: list[Any] | None) -> str:
    """A field's default as the person sees it: a titled choice by its title."""
    default = prop["default"]
    for option in options or []:
        if option.value == default and option.label != str(default):
            return str(option.label)
    if isinstance(default, list) and options:
        labels = {o.value: o.label for o in options}
        return ", ".join(str(labels.get(v, v)) for v in default)
    return json.dumps(default)


_SKIP = object()


def _ask_field(
    term: Terminal, name: str, prop: Mapping[str, Any], required: bool, can_pause: bool
) -> Any:
    prompt = _field_prompt(term, name, prop, required)
    for attempt in range(TRIES + 1):
        text = term.read_line(prompt)
        try:
            _command(text, can_pause)
        except _Reask as why:
            term.write(str(why))
            continue
        if text.strip() == "?":
            term.write("  commands: !decline  !cancel" + ("  !pause" if can_pause else "") + "\n")
            continue
        if not text or (not text.strip() and field_kind(prop) != "string"):
            if "default" in prop:
                return prop["default"]
            if not required:
                return _SKIP
            if attempt < TRIES:
                term.write(term.style("  a value is required", "31") + "\n")
                continue
        try:
            return parse_field(text, prop)
        except ValueError as exc:
            if attempt < TRIES:
                term.write(term.style(f"  {exc}; try again", "31") + "\n")
    term.write("  too many invalid answers; cancelling this request\n")
    raise _Stop({"action": "cancel"})


def _fill(term: Terminal, schema: Mapping[str, Any], can_pause: bool) -> dict[str, Any]:
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    content: dict[str, Any] = {}
    unnamed = scalar_question(properties)
    for name, prop in properties.items():
        value = _ask_field(term, "" if unnamed else name, prop if isinstance(prop, dict) else {},
                           name in required, can_pause)  # fmt: skip
        if value is not _SKIP:
            content[name] = value
    return content


def ask_form(
    term: Terminal, header: str, message: str, schema: Mapping[str, Any], *, can_pause: bool
) -> Any:
    """Ask one form; returns an ``ElicitResult`` as wire data, or `PAUSE`."""
    term.write(f"{header}\n{sanitize(message)}\n")
    properties = schema.get("properties") or {}
    try:
        while True:
            content = _fill(term, schema, can_pause)
            if len(properties) == 1:  # one answer (a pick, a yes, a value) is its own review
                return {"action": "accept", "content": content}
            review = f"  send {json.dumps(content)}? [Y]es / [e]dit / [d]ecline / [c]ancel > "
            choice = term.read_line(review).strip().lower()
            try:
                _command(choice, can_pause)
            except _Reask as why:
                term.write(str(why))
                continue
            if choice in ("", "y", "yes"):
                return {"action": "accept", "content": content}
            if choice in ("d", "decline"):
                return {"action": "decline"}
            if choice in ("c", "cancel"):
                return {"action": "cancel"}
    except _Stop as stop:
        return stop.outcome


def show_url(term: Terminal, url: str) -> str:
    """The URL for display: sanitised, its host emphasised (and its punycode spelled out)."""
    safe = sanitize(url, multiline=False)
    parts = urlsplit(safe)
    host = parts.hostname or ""
    if not host:
        return safe
    start = safe.find(host)
    shown = safe[:start] + term.style(host, "1;4") + safe[start + len(host) :]
    if host.startswith("xn--") or ".xn--" in host:
        with contextlib.suppress(UnicodeError):
            shown += f"  (host {host} = {host.encode().decode('idna')})"
    return shown


def ask_url(term: Terminal, header: str, message: str, url: str, *, can_pause: bool) -> Any:
    """URL consent: nothing is opened without a keypress; returns wire data, or `PAUSE`."""
    host = urlsplit(url).hostname or "?"
    term.write(
        f"{header}\n{sanitize(message)}\n"
        f"  the server asks you to open: {show_url(term, url)}\n"
        f"  host: {term.style(sanitize(host, multiline=False), '1')}\n"
    )
    prompt = "  [o]pen in browser / [a]lready done / [d]ecline / [c]ancel > "
    while True:
        choice = term.read_line(prompt).strip().lower()
        if choice == PAUSE:
            if can_pause:
                return PAUSE
            term.write(NO_PAUSE)
        if choice in ("o", "open"):
            import webbrowser

            opened = webbrowser.open(url)
            term.write("  opened in your browser\n" if opened else "  open it by hand\n")
            return {"action": "accept"}
        if choice in ("a", "done", "already done"):
            return {"action": "accept"}
        if choice in ("d", "decline", "!decline"):
            return {"action": "decline"}
        if choice in ("c", "cancel", "!cancel"):
            return {"action": "cancel"}


def _render_message(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    blocks = content if isinstance(content, list) else [content]
    parts = []
    for block in blocks:
        if isinstance(block, dict) and block.get("type") == "text":
            parts.append(sanitize(str(block.get("text", ""))))
        elif isinstance(block, dict):
            parts.append(f"[{block.get('type')} {block.get('mimeType', '')}]".replace(" ]", "]"))
    return f"  {sanitize(str(message.get('role', '?')), multiline=False)}: " + " ".join(parts)


def ask_sampling(
    term: Terminal, header: str, params: Mapping[str, Any], *, can_run: bool, can_pause: bool
) -> Any:
    """Sampling: show the conversation; returns a reply (wire data), ``"run"``, or `PAUSE`."""
    lines = [header]
    if params.get("systemPrompt"):
        lines.append(f"  system: {sanitize(str(params['systemPrompt']))}")
    lines += [_render_message(m) for m in params.get("messages") or [] if isinstance(m, dict)]
    lines.append(f"  (max {params.get('maxTokens')} tokens)")
    term.write("\n".join(lines) + "\n")
    run = " / [r]un --sampling-cmd" if can_run else ""
    while True:
        choice = term.read_line(f"  [t]ype a reply{run} / [d]ecline > ").strip().lower()
        if choice == PAUSE:
            if can_pause:
                return PAUSE
            term.write(NO_PAUSE)
        if choice in ("r", "run") and can_run:
            return "run"
        if choice in ("d", "decline", "!decline"):
            return {"decline": True}
        if choice in ("t", "type"):
            term.write("  type the reply; end with a line holding only '.'\n")
            typed: list[str] = []
            while (line := term.read_line("  > ")) != ".":
                typed.append(line)
            return {
                "role": "assistant",
                "content": {"type": "text", "text": "\n".join(typed)},
                "model": "human",
            }
