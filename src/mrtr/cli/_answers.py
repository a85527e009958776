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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

from mrtr.cli._exit import UsageError
from mrtr.cli._forms import check_content, defaults, parse_field

__all__ = [
    "AnswerBook",
    "AnswerSpec",
    "Recorder",
    "answer_hint",
    "check_writable",
    "one_field",
    "read_saved",
    "write_private",
]

ANSWERS_FORMAT = "mrtr.answers/1"
_T = TypeVar("_T")
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
    value: str | None = None  # a bare value from a file: the request's kind decides its use
    source: str = "flag"


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value a server takes")


def _load_json_value(text: str, what: str) -> Any:
    """Parse JSON (or ``@FILE``): any failure is a usage error naming `what` and the problem."""
    if text.startswith("@"):
        try:
            text = Path(text[1:]).read_text(encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"{what}: cannot read {text[1:]}: {exc.strerror}") from None
        except UnicodeDecodeError as exc:
            raise UsageError(f"{what}: not UTF-8 text (byte {exc.start})") from None
    try:
        return json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{what}: invalid JSON ({exc.msg}, line {exc.lineno})") from None
    except RecursionError:
        raise UsageError(f"{what}: nested too deeply") from None
    except ValueError as exc:  # an integer of more than 4,300 digits, NaN
        raise UsageError(f"{what}: {exc}") from None


def _sampling_spec(sampling: Any, what: str, source: str) -> AnswerSpec:
    if isinstance(sampling, str):
        sampling = {"text": sampling}
    if not isinstance(sampling, dict):
        raise UsageError(f"{what}: 'sampling' must be an object or a string")
    return AnswerSpec(sampling=dict(sampling), source=source)


def _spec_from_json(value: Any, what: str, source: str) -> AnswerSpec:
    """An answer value: a form's content object, a full response, or a bare value.

    A bare string, number or boolean is kept as text (``--answer KEY=VALUE`` reads it
    the same way) and used when the request arrives: the value of a one-field form (a
    scalar question is one), or a sampling reply's text.
    """
    if isinstance(value, str):
        return AnswerSpec(value=value, source=source)
    if isinstance(value, (bool, int, float)):
        return AnswerSpec(value=json.dumps(value), source=source)
    if not isinstance(value, dict):
        raise UsageError(
            f"{what}: expected a JSON object, string, number or boolean, not {_json_kind(value)}"
        )
    if "sampling" in value:
        return _sampling_spec(value["sampling"], what, source)
    if "roots" in value or ("role" in value and "content" in value):
        if "roots" in value and not isinstance(value["roots"], list):
            raise UsageError(f"{what}: 'roots' must be a list")
        return AnswerSpec(response=value, source=source)
    if set(value) <= {"action", "content"} and value:
        action = value.get("action", "accept")
        if action not in ("accept", "decline", "cancel"):
            raise UsageError(f"{what}: action must be accept, decline or cancel")
        content = value.get("content")
        if content is not None and not isinstance(content, dict):
            raise UsageError(f"{what}: 'content' must be an object, not {_json_kind(content)}")
        return AnswerSpec(action=action, content=content, source=source)
    return AnswerSpec(action="accept", content=value, source=source)


def _json_kind(value: Any) -> str:
    kinds = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    return kinds.get(type(value), "a number")


_WHEN_TYPES: dict[str, tuple[type, ...]] = {
    "method": (str,), "mode": (str,), "message": (str,), "host": (str,), "fields": (list,),
}  # fmt: skip


def _check_when(when: Any, where: str) -> dict[str, Any]:
    """A rule's ``when``: an object of known keys with values of the right type."""
    if not isinstance(when, dict):
        raise UsageError(f"{where} needs a 'when' object")
    for name, value in when.items():
        kinds = _WHEN_TYPES.get(name)
        if kinds is None:
            raise UsageError(
                f"{where}: unknown 'when' key {name!r} (one of {', '.join(_WHEN_TYPES)})"
            )
        if not isinstance(value, kinds):
            raise UsageError(f"{where}: 'when.{name}' must be {_json_kind(kinds[0]())}")
    if not all(isinstance(f, str) for f in when.get("fields", [])):
        raise UsageError(f"{where}: 'when.fields' must be a list of strings")
    if "message" in when:
        try:
            re.compile(when["message"])
        except re.error as exc:
            raise UsageError(f"{where}: 'when.message' is not a valid regex: {exc}") from None
    return when


def one_field(params: Mapping[str, Any]) -> str | None:
    """The only field of a form-mode elicitation, if it has exactly one."""
    if params.get("mode") == "url":
        return None
    properties = (params.get("requestedSchema") or {}).get("properties") or {}
    return next(iter(properties)) if len(properties) == 1 else None


def answer_hint(key: str, method: str, params: Mapping[str, Any]) -> list[str]:
    """The flags that answer this request (values to fill in are ``…``)."""
    if method == "elicitation/create" and params.get("mode") == "url":
        return ["--accept", key]
    if method == "sampling/createMessage":
        return ["--answer", f"{key}=…"]
    if method == "roots/list":
        return ["--root", "…"]
    if one_field(params) is not None:
        return ["--answer", f"{key}=…"]
    schema = params.get("requestedSchema") or {}
    fields = [str(f) for f in schema.get("required") or []] or list(schema.get("properties") or {})
    words: list[str] = []
    for name in fields:
        words += ["--answer", f"{key}.{name}=…"]
    return words or ["--accept", key]


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
        self.applied: set[str] = set()  # the answer flags that answered something

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
                raise UsageError(f"--answer {text!r}: expected KEY=VALUE or KEY.field=VALUE")
            try:
                parsed: Any = _load_json_value(value, f"--answer {left}")
            except UsageError:
                if value.startswith("@"):
                    raise
                parsed = _TEXT  # a value, for a field or a one-field form
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
                if left == name:
                    spec = self._whole(left, text, parsed, method, params)
                    self.applied.add(left)
                elif left.startswith(name + ".") and left[len(name) + 1 :] in fields:
                    spec = spec if spec is not None and spec.response is None else AnswerSpec()
                    spec.action = "accept"
                    spec.fields[left[len(name) + 1 :]] = text
                    self.applied.add(left)
            if name in self.actions:
                spec = spec or AnswerSpec()
                spec.action = self.actions[name]
                self.applied.add(name)
            if spec is not None:
                self.used.add(name)
                return spec
        return None

    def typos(self, key: str, method: str, params: Mapping[str, Any]) -> list[str]:
        """What the unused answer flags probably meant for this request ("did you mean")."""
        import difflib

        properties = (params.get("requestedSchema") or {}).get("properties") or {}
        fields = ["text"] if method == "sampling/createMessage" else [str(p) for p in properties]
        found = []
        for left in self.unmatched():
            flag = (
                "--answer"
                if any(a == left for a, _, _ in self.flag_answers)
                else (f"--{self.actions.get(left, 'answer')}")
            )
            if left.startswith(key + "."):
                name = left[len(key) + 1 :]
                close = difflib.get_close_matches(name, fields, n=1)
                hint = f"; did you mean {key}.{close[0]}?" if close else ""
                asked = ", ".join(fields) or "none"
                found.append(
                    f"{flag} {left}: {key!r} has no field {name!r} (its fields: {asked}){hint}"
                )
            elif difflib.get_close_matches(left.split(".", 1)[0], [key], n=1):
                found.append(
                    f"{flag} {left}: the server asked for no such key; did you mean {key}?"
                )
        return found

    @staticmethod
    def _whole(
        left: str, text: str, parsed: Any, method: str, params: Mapping[str, Any]
    ) -> AnswerSpec:
        """``--answer KEY=VALUE``: JSON content, a sampling text, or a one-field form's value."""
        field = one_field(params) if method == "elicitation/create" else None
        if field is not None and not isinstance(parsed, dict):
            value = parsed if isinstance(parsed, str) else text
            return AnswerSpec(action="accept", fields={field: value})
        if parsed is _TEXT:
            if method == "sampling/createMessage":
                return AnswerSpec(sampling={"text": text})
            hint = " ".join(answer_hint(left, method, params))
            raise UsageError(
                f"--answer {left}={text}: not JSON, and the request is not a one-field form;"
                f" answer it with {hint}"
            )
        return _spec_from_json(parsed, f"--answer {left}", "flag")

    def unmatched(self) -> list[str]:
        """The answer flags whose key matched no request (a typo, or a key never asked)."""
        names = [left for left, _, _ in self.flag_answers] + list(self.actions)
        return [n for n in dict.fromkeys(names) if n != "*" and n not in self.applied]

    def add_file(self, path: str) -> None:
        """Read an ``mrtr.answers/1`` file (keyed answers, rules, otherwise).

        Raises:
            UsageError: the file is unreadable or malformed; the message names it and where.
        """
        data = _load_json_value("@" + path, f"--answers {path}")
        if not isinstance(data, dict) or data.get("format", ANSWERS_FORMAT) != ANSWERS_FORMAT:
            raise UsageError(f"--answers {path}: not an {ANSWERS_FORMAT} answers file")
        keyed = data["answers"] if data.get("answers") is not None else {}
        rules = data["rules"] if data.get("rules") is not None else []
        if not isinstance(keyed, dict):
            raise UsageError(
                f"--answers {path}: 'answers' must be an object, not {_json_kind(keyed)}"
            )
        if not isinstance(rules, list):
            raise UsageError(f"--answers {path}: 'rules' must be a list, not {_json_kind(rules)}")
        for key, value in keyed.items():
            where = f"--answers {path}: answers.{key}"
            self.keyed.setdefault(str(key), _spec_from_json(value, where, "file"))
        for index, rule in enumerate(rules):
            where = f"--answers {path}: rule {index + 1}"
            if not isinstance(rule, dict):
                raise UsageError(f"{where} must be an object, not {_json_kind(rule)}")
            when = _check_when(rule.get("when"), where)
            answer = _spec_from_json(rule.get("answer", {}), where, "rule")
            self.rules.append((when, answer))
        otherwise = data.get("otherwise")
        if otherwise is not None:
            if not isinstance(otherwise, str) or otherwise not in POLICIES:
                raise UsageError(
                    f"--answers {path}: otherwise must be one of {', '.join(POLICIES)}"
                )
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
    if spec.value is not None:
        content.update(_bare_value(spec.value, key, params))
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


def _bare_value(value: str, key: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """A bare value from the answers file as the content of a one-field form."""
    properties = (params.get("requestedSchema") or {}).get("properties") or {}
    only = one_field(params)
    if only is None:
        names = ", ".join(map(str, properties)) or "none"
        raise UsageError(
            f"the answer for {key!r} is a single value, but the form has the fields"
            f' {names}: give an object of them ({{"field": value, ...}})'
        )
    try:
        return {only: parse_field(value, properties[only])}
    except ValueError as exc:
        raise UsageError(f"the answer for {key!r} ({value}): {exc}") from None


def sampling_response(spec: AnswerSpec, key: str) -> dict[str, Any]:
    """The ``CreateMessageResult`` (as wire data) an answer makes for one sampling request."""
    if spec.response is not None:
        return spec.response
    reply = spec.sampling or {}
    if "text" not in reply and spec.value is not None:
        reply = {"text": spec.value}
    if "text" not in reply and "text" in spec.fields:
        reply = {"text": spec.fields["text"]}
    if "text" not in reply:
        raise UsageError(f"the answer for sampling request {key!r} needs a text")
    return {
        "role": "assistant",
        "content": {"type": "text", "text": str(reply["text"])},
        "model": str(reply.get("model", "human")),
    }


def read_saved(path: str, parse: Callable[[str], _T], refused: type[Exception], what: str) -> _T:
    """Read back a file `write_private` wrote (a paused call, a task handle).

    Raises:
        UsageError: the file cannot be read, or `parse` refuses it with `refused`
            (named as not being `what`).
    """
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    try:
        return parse(text)
    except refused as exc:
        raise UsageError(f"{path}: not {what}: {exc}") from None


def write_private(path: str, data: Any, *, flag: str = "") -> None:
    """Write JSON readable by this user only (mode 0600).

    Raises:
        UsageError: the file cannot be written (named with the `flag` that chose it).
    """
    from mrtr.cli._safe import json_text

    text = json_text(data, indent=2) + "\n"
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(path, 0o600)
    except OSError as exc:
        where = f"{flag} {path}" if flag else path
        raise UsageError(f"{where}: cannot write: {exc.strerror or exc}") from None


def check_writable(path: str, flag: str) -> None:
    """Fail before the call, not after it, when a file mrtr will write cannot be written.

    Raises:
        UsageError: its folder does not exist, or the path is a folder.
    """
    target = Path(path)
    if target.is_dir():
        raise UsageError(f"{flag} {path}: is a folder, not a file")
    if not target.parent.is_dir():
        raise UsageError(f"{flag} {path}: the folder {target.parent} does not exist")


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
        write_private(
            self.path, {"format": ANSWERS_FORMAT, "answers": self.answers}, flag="--record-answers"
        )
