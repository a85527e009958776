"""Answers given ahead of time: ``--answer``, ``--accept``, ``--decline``, ``--answers FILE``.

An input request is matched by its key (the server's key in the 2026-07-28 era;
``elicit-1``, ``sample-1``, ... in arrival order on the legacy back-channel; ``*`` matches
any), then by the answers file's rules (method, mode, field names, message regex, URL
host). An answer is checked against the request's schema before it is sent: a bad answer
is a usage error, never a silent accept. `Recorder` writes the answers a person typed as
an answers file to replay with ``--answers``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from mrtr.cli._exit import UsageError
from mrtr.cli._forms import check_content, defaults, parse_field

__all__ = ["AnswerBook", "AnswerSpec", "Recorder", "write_private"]

ANSWERS_FORMAT = "mrtr.answers/1"
_TEXT = object()  # an --answer value that is not JSON: usable only as KEY.field=VALUE
POLICIES = ("pause", "fail", "decline", "cancel")


@dataclass(slots=True)
class AnswerSpec:
    """What was said ahead of time about one key (or one rule)."""

    action: str | None = None
    content: dict[str, Any] | None = None
    fields: dict[str, str] = field(default_factory=dict)  # KEY.field=text, typed later
    sampling: dict[str, Any] | None = None
    response: dict[str, Any] | None = None  # a full response given verbatim
    source: str = "flag"


def _load_json_value(text: str, what: str) -> Any:
    if text.startswith("@"):
        try:
            text = Path(text[1:]).read_text(encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"{what}: cannot read {text[1:]}: {exc.strerror}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{what}: invalid JSON ({exc.msg})") from None


def _spec_from_json(value: Any, what: str, source: str) -> AnswerSpec:
    """An answer value: a form's content object, a full response, or a sampling reply."""
    if isinstance(value, str):
        return AnswerSpec(sampling={"text": value}, source=source)
    if not isinstance(value, dict):
        raise UsageError(f"{what}: expected a JSON object or string")
    if "sampling" in value:
        return AnswerSpec(sampling=dict(value["sampling"]), source=source)
    if "roots" in value or ("role" in value and "content" in value):
        return AnswerSpec(response=value, source=source)
    if set(value) <= {"action", "content"} and value:
        action = value.get("action", "accept")
        if action not in ("accept", "decline", "cancel"):
            raise UsageError(f"{what}: action must be accept, decline or cancel")
        content = value.get("content")
        return AnswerSpec(action=action, content=content, source=source)
    return AnswerSpec(action="accept", content=value, source=source)


class AnswerBook:
    """Everything answered ahead of time, looked up per request.

    ``--answer`` words are kept as written and matched when a request arrives, because a
    server's key may itself contain dots: ``KEY=JSON`` matches the key exactly, and
    ``KEY.field=VALUE`` matches when ``field`` is one of the request's form fields (or
    ``text``, for a sampling reply). Flags win over the answers file.
    """

    def __init__(self) -> None:
        self.flag_answers: list[tuple[str, str, Any]] = []  # (left, text, parsed JSON or _TEXT)
        self.actions: dict[str, str] = {}
        self.keyed: dict[str, AnswerSpec] = {}
        self.rules: list[tuple[dict[str, Any], AnswerSpec]] = []
        self.otherwise: str | None = None
        self.used: set[str] = set()

    def add_flags(
        self,
        answers: Sequence[str] = (),
        accept: Sequence[str] = (),
        decline: Sequence[str] = (),
        cancel: Sequence[str] = (),
    ) -> None:
        """Take the answer flags (checked here: a word that can never match is an error)."""
        for text in answers:
            left, sep, value = text.partition("=")
            if not sep or not left:
                raise UsageError(f"--answer {text!r}: expected KEY=JSON or KEY.field=VALUE")
            try:
                parsed: Any = _load_json_value(value, f"--answer {left}")
            except UsageError:
                if "." not in left or value.startswith("@"):
                    raise
                parsed = _TEXT  # only the KEY.field=VALUE reading is possible
            self.flag_answers.append((left, value, parsed))
        for keys, action in ((accept, "accept"), (decline, "decline"), (cancel, "cancel")):
            for key in keys:
                self.actions[key] = action

    def _from_flags(self, key: str, method: str, params: Mapping[str, Any]) -> AnswerSpec | None:
        properties = (params.get("requestedSchema") or {}).get("properties") or {}
        fields = {"text"} if method == "sampling/createMessage" else set(properties)
        spec: AnswerSpec | None = None
        for name in (key, "*"):
            for left, text, parsed in self.flag_answers:
                if left == name and parsed is not _TEXT:
                    spec = _spec_from_json(parsed, f"--answer {left}", "flag")
                elif left.startswith(name + ".") and left[len(name) + 1 :] in fields:
                    spec = spec if spec is not None and spec.response is None else AnswerSpec()
                    spec.action = "accept"
                    spec.fields[left[len(name) + 1 :]] = text
            if name in self.actions:
                spec = spec or AnswerSpec()
                spec.action = self.actions[name]
            if spec is not None:
                self.used.add(name)
                return spec
        return None

    def add_file(self, path: str) -> None:
        """Read an ``mrtr.answers/1`` file (keyed answers, rules, otherwise)."""
        data = _load_json_value("@" + path, f"--answers {path}")
        if not isinstance(data, dict) or data.get("format", ANSWERS_FORMAT) != ANSWERS_FORMAT:
            raise UsageError(f"{path}: not an {ANSWERS_FORMAT} answers file")
        for key, value in (data.get("answers") or {}).items():
            self.keyed.setdefault(str(key), _spec_from_json(value, f"{path}: {key}", "file"))
        for index, rule in enumerate(data.get("rules") or []):
            if not isinstance(rule, dict) or not isinstance(rule.get("when"), dict):
                raise UsageError(f"{path}: rule {index + 1} needs a 'when' object")
            answer = _spec_from_json(rule.get("answer", {}), f"{path}: rule {index + 1}", "rule")
            self.rules.append((rule["when"], answer))
        otherwise = data.get("otherwise")
        if otherwise is not None:
            if otherwise not in POLICIES:
                raise UsageError(f"{path}: otherwise must be one of {', '.join(POLICIES)}")
            self.otherwise = str(otherwise)

    def find(self, key: str, method: str, params: Mapping[str, Any]) -> AnswerSpec | None:
        """The answer for this request, if any was given."""
        flagged = self._from_flags(key, method, params)
        if flagged is not None:
            return flagged
        for name in (key, "*"):
            if name in self.keyed:
                self.used.add(name)
                return self.keyed[name]
        for when, answer in self.rules:
            if _matches(when, method, params):
                return answer
        return None


def _matches(when: Mapping[str, Any], method: str, params: Mapping[str, Any]) -> bool:
    if "method" in when and when["method"] != method:
        return False
    if "mode" in when and (params.get("mode") or "form") != when["mode"]:
        return False
    if "fields" in when:
        props = (params.get("requestedSchema") or {}).get("properties") or {}
        if not set(when["fields"]) <= set(props):
            return False
    if "message" in when:
        try:
            if not re.search(str(when["message"]), str(params.get("message", ""))):
                return False
        except re.error as exc:
            raise UsageError(f"answers rule: bad message pattern: {exc}") from None
    if "host" in when:
        host = urlsplit(str(params.get("url", ""))).hostname or ""
        if host != when["host"]:
            return False
    return True


def elicit_response(spec: AnswerSpec, key: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """The ``ElicitResult`` (as wire data) an answer makes for one elicitation.

    Raises:
        UsageError: the answer does not fit the requested schema.
    """
    if spec.response is not None:
        return spec.response
    action = spec.action or "accept"
    if action != "accept":
        return {"action": action}
    if params.get("mode") == "url":
        return {"action": "accept"}
    schema = params.get("requestedSchema") or {}
    properties = schema.get("properties") or {}
    content = {**defaults(schema), **(spec.content or {})}
    for name, text in spec.fields.items():
        prop = properties.get(name)
        if not isinstance(prop, dict):
            raise UsageError(f"--answer {key}.{name}: the form has no field {name!r}")
        try:
            content[name] = parse_field(text, prop)
        except ValueError as exc:
            raise UsageError(f"--answer {key}.{name}={text}: {exc}") from None
    problems = check_content(content, schema)
    if problems:
        raise UsageError(f"the answer for {key!r} does not fit the form: {'; '.join(problems)}")
    return {"action": "accept", "content": content}


def sampling_response(spec: AnswerSpec, key: str) -> dict[str, Any]:
    """The ``CreateMessageResult`` (as wire data) an answer makes for one sampling request."""
    if spec.response is not None:
        return spec.response
    reply = spec.sampling or {}
    if "text" not in reply and "text" in spec.fields:
        reply = {"text": spec.fields["text"]}
    if "text" not in reply:
        raise UsageError(f"the answer for sampling request {key!r} needs a text")
    return {
        "role": "assistant",
        "content": {"type": "text", "text": str(reply["text"])},
        "model": str(reply.get("model", "human")),
    }


def write_private(path: str, data: Any) -> None:
    """Write JSON readable by this user only (mode 0600)."""
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.chmod(path, 0o600)


class Recorder:
    """Collects what a person answered, keyed, to write as an answers file."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.answers: dict[str, Any] = {}

    def add(self, key: str, method: str, response: Mapping[str, Any]) -> None:
        """Remember one answer (sampling replies as text, forms as action and content)."""
        if method == "sampling/createMessage":
            content = response.get("content") or {}
            self.answers[key] = {"sampling": {"text": content.get("text", "")}}
        elif method == "elicitation/create":
            self.answers[key] = {k: v for k, v in response.items() if k in ("action", "content")}

    def write(self) -> None:
        """Write the answers file."""
        write_private(self.path, {"format": ANSWERS_FORMAT, "answers": self.answers})
