"""The ``mrtr`` argument parser (stdlib argparse; nothing heavy is imported to build it).

Server commands share one set of flags (connection, answers, output). Their positional
words are read by the command itself, because a TARGET is left out when the server
command comes after ``--``: ``mrtr call provision name=orders -- python3 server.py``.
"""

from __future__ import annotations

import argparse
import math
import sys

from mrtr.cli._exit import EXIT_CODES_HELP

__all__ = ["CONNECT_TIMEOUT", "SUBPARSERS", "build_parser", "split_server_command"]

CONNECT_TIMEOUT = 60.0
"""Seconds to start a server and finish the handshake unless --connect-timeout says."""

SUBPARSERS: dict[str, argparse.ArgumentParser] = {}
"""The command parsers of the last `build_parser` call, by name (for help pages)."""

DESCRIPTION = """\
Talk to any MCP server from a terminal or a script: list and call its tools, read its
resources, get its prompts, and answer every input request it sends (elicitation forms and
URLs, sampling, roots) on the terminal, from flags or from a file; pause a call and resume
it later. Both protocol eras (2026-07-28 and 2025-11-25).
"""

TARGETS = """\
TARGET is a URL (streamable HTTP), a configured server (NAME, SOURCE:NAME or FILE.json:NAME;
see `mrtr servers`), `demo` (the bundled demo server) or a .py file; or leave it out and put
the server command at the end after --:  mrtr call provision name=orders -- python3 server.py

examples:
  mrtr list demo
  mrtr call demo provision name=orders
  mrtr call demo provision name=orders --answer region=eu-west-1 --answer confirm=yes --json
  mrtr call https://example.com/mcp search q=mcp -H 'Authorization: Bearer ${TOKEN}'
"""


def split_server_command(argv: list[str]) -> tuple[list[str], list[str]]:
    """Split at the first ``--``: mrtr's own words, and the stdio server's command."""
    if "--" in argv:
        index = argv.index("--")
        return argv[:index], argv[index + 1 :]
    return argv, []


def _seconds(text: str) -> float:
    """A flag's number of seconds: finite and above zero."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a number of seconds > 0, not {text!r}")
    return value


def _count(text: str) -> int:
    """A flag's count: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, not {text!r}")
    return value


ANSWER_DEFAULTS: dict[str, object] = {
    "answer": [], "accept": [], "decline": [], "cancel": [], "answers": None,
    "record_answers": None, "sampling_cmd": None, "sampling_timeout": None, "no_input": False,
    "unanswered": None,
    "pause": None, "root": [], "force": False, "tool_help": False,
}  # fmt: skip
"""The answering flags' values for the commands that take none (info, list, ping ...)."""


def _connection_flags() -> argparse.ArgumentParser:
    shared = argparse.ArgumentParser(add_help=False)
    conn = shared.add_argument_group("connection")
    conn.add_argument(
        "-H",
        "--header",
        action="append",
        default=[],
        metavar="'NAME: VALUE'",
        help="HTTP header (repeatable); ${VAR} in the value is expanded by mrtr",
    )
    conn.add_argument(
        "--mode",
        choices=("auto", "legacy", "2026-07-28"),
        default="auto",
        help="protocol era (default: auto, probe then fall back to legacy)",
    )
    conn.add_argument(
        "--timeout",
        type=_seconds,
        metavar="S",
        help="budget for the whole call, all rounds included",
    )
    conn.add_argument("--request-timeout", type=_seconds, metavar="S", help="timeout per request")
    conn.add_argument(
        "--connect-timeout",
        type=_seconds,
        metavar="S",
        help=f"budget for starting the server and the handshake (default {CONNECT_TIMEOUT:g})",
    )
    conn.add_argument(
        "--probe-timeout",
        type=_seconds,
        metavar="S",
        help="how long auto mode waits for server/discover before trying legacy (default 10)",
    )
    conn.add_argument(
        "-e",
        "--env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="environment of a stdio server (repeatable); ${VAR} in the value is expanded",
    )
    conn.add_argument("--cwd", metavar="DIR", help="working directory of a stdio server")
    conn.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="FILE",
        help="read servers from this config file too (repeatable)",
    )
    conn.add_argument(
        "--no-discover",
        action="store_true",
        help="read only --config files, not the editors' configs",
    )
    conn.add_argument(
        "--trust-project",
        action="store_true",
        help="let a project config (.mcp.json ... in this directory) use your ${VAR} secrets",
    )
    conn.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="ID=VALUE",
        help="value of a VS Code ${input:ID} (or set MRTR_INPUT_<ID>)",
    )
    conn.add_argument(
        "--server-stderr",
        action="store_true",
        help="pass a stdio server's stderr through, prefixed [server]",
    )
    conn.add_argument(
        "--backend",
        choices=("asyncio", "trio"),
        help="event loop (default: $MRTR_BACKEND or asyncio)",
    )
    return shared


def _answer_flags() -> argparse.ArgumentParser:
    shared = argparse.ArgumentParser(add_help=False)
    ans = shared.add_argument_group("answering input requests")
    ans.add_argument(
        "--answer",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="answer KEY: a one-field form's value, KEY.field=VALUE, or a JSON content object",
    )
    ans.add_argument(
        "--accept",
        action="append",
        default=[],
        metavar="KEY",
        help="accept KEY (form defaults; URL done out of band); * for all",
    )
    ans.add_argument("--decline", action="append", default=[], metavar="KEY", help="decline KEY")
    ans.add_argument("--cancel", action="append", default=[], metavar="KEY", help="cancel KEY")
    ans.add_argument("--answers", metavar="FILE", help="answers file (mrtr.answers/1)")
    ans.add_argument(
        "--record-answers",
        metavar="FILE",
        help="write what you answered on the terminal, to replay with --answers",
    )
    ans.add_argument(
        "--sampling-cmd",
        metavar="CMD",
        help="answer sampling with CMD (gets the request as JSON on stdin)",
    )
    ans.add_argument(
        "--root",
        action="append",
        default=[],
        metavar="PATH",
        help="a root offered to the server (repeatable)",
    )
    ans.add_argument(
        "--sampling-timeout",
        type=_seconds,
        metavar="S",
        help="how long --sampling-cmd may run (default 300)",
    )
    ans.add_argument("--no-input", action="store_true", help="never prompt on the terminal")
    ans.add_argument(
        "--unanswered",
        choices=("fail", "pause", "decline", "cancel"),
        help="what to do with a request nobody answered (default: fail)",
    )
    ans.add_argument(
        "--pause",
        metavar="FILE",
        help="pause an unanswered call into FILE (2026-07-28); finish with resume",
    )
    ans.add_argument(
        "--max-rounds",
        type=_count,
        metavar="N",
        help="input-required rounds allowed per call (default 10)",
    )
    return shared


def _output_flags() -> argparse.ArgumentParser:
    shared = argparse.ArgumentParser(add_help=False)
    out = shared.add_argument_group("output")
    out.add_argument(
        "--json",
        action="store_const",
        const="json",
        dest="output",
        help="one JSON document on stdout, on success and failure",
    )
    out.add_argument(
        "-o",
        "--output",
        choices=("text", "json", "result", "content", "jsonl"),
        default="text",
        help="output mode (default text)",
    )
    out.add_argument(
        "-v", "--verbose", action="count", default=0, help="one line per round; server log messages"
    )
    out.add_argument(
        "--trace",
        action="store_true",
        help="print every JSON-RPC frame on stderr (secrets redacted)",
    )
    out.add_argument(
        "--trace-file",
        metavar="FILE",
        help="write every JSON-RPC frame to FILE as JSON lines (secrets redacted)",
    )
    out.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    return shared


def build_parser(prog: str | None = None) -> argparse.ArgumentParser:
    """The whole command tree."""
    parser = argparse.ArgumentParser(
        prog=prog or "mrtr",
        description=DESCRIPTION,
        epilog=TARGETS + "\n" + EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="store_true", help="print the version")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    connection, answering, output = _connection_flags(), _answer_flags(), _output_flags()

    def add(
        name: str, help_text: str, words: str, *, answers: bool = False, **extra: object
    ) -> argparse.ArgumentParser:
        parents = [connection, answering, output] if answers else [connection, output]
        command = sub.add_parser(
            name, help=help_text, description=help_text, parents=parents,
            epilog=TARGETS + "\n" + EXIT_CODES_HELP,
            formatter_class=argparse.RawDescriptionHelpFormatter, **extra,  # type: ignore[arg-type]
        )  # fmt: skip
        command.add_argument("words", nargs="*", metavar=words)
        if not answers:
            command.set_defaults(**ANSWER_DEFAULTS)
        SUBPARSERS[name] = command
        return command

    servers = sub.add_parser("servers", help="servers found in your editors' config files")
    servers.add_argument("--config", action="append", default=[], metavar="FILE")
    servers.add_argument("--no-discover", action="store_true")
    servers.add_argument("--json", action="store_const", const="json", dest="output")
    servers.add_argument("-o", "--output", choices=("text", "json"), default="text")
    SUBPARSERS["servers"] = servers
    add("info", "connect and show the server: era, version, capabilities", "TARGET")
    add("list", "list tools, prompts, resources or templates", "TARGET [tools|prompts|...]")
    call = add("call", "call a tool, answering every input request", "TARGET TOOL [KEY=VALUE]",
               answers=True, add_help=False)  # fmt: skip
    call.add_argument(
        "-h",
        "--help",
        action="store_true",
        dest="tool_help",
        help="show this help, or the tool's parameters when TOOL is given",
    )
    call.add_argument("--args", metavar="JSON|@FILE|-", help="base arguments object")
    call.add_argument(
        "--task",
        action="store_true",
        help="let the server run the call as a task (tasks extension), and show its life",
    )
    call.add_argument(
        "--task-file",
        metavar="FILE",
        help="with --task: keep the task's handle in FILE (see mrtr task)",
    )
    call.add_argument("--no-validate", action="store_true", help="skip the schema checks")
    add("read", "read a resource", "TARGET URI", answers=True)
    prompt = add("prompt", "get a prompt", "TARGET NAME [KEY=VALUE]", answers=True,
                 add_help=False)  # fmt: skip
    prompt.add_argument(
        "-h",
        "--help",
        action="store_true",
        dest="tool_help",
        help="show this help, or the prompt's arguments when NAME is given",
    )
    prompt.add_argument("--no-validate", action="store_true", help="skip the argument checks")
    add("ping", "ping the server and show the round-trip time", "TARGET")
    resume = add("resume", "finish a paused call (--pause FILE)", "FILE", answers=True)
    resume.add_argument(
        "--force", action="store_true", help="send the retry again though the call finished"
    )
    add("task", "poll, answer, finish or cancel a task (call --task-file)",
               "status|answer|result|cancel FILE [TARGET]", answers=True)  # fmt: skip
    login = add("login", "log in to a server with OAuth and keep the token", "TARGET")
    login.add_argument(
        "--paste",
        action="store_true",
        help="headless: open the URL anywhere, paste where the browser ended",
    )
    login.add_argument(
        "--no-browser",
        action="store_true",
        help="print the URL (loopback redirect) instead of opening a browser",
    )
    login.add_argument("--force", action="store_true", help="log in again even with a token")
    add("logout", "forget a server's OAuth token", "TARGET")
    inspect = add("inspect", "a local web page to call, answer and watch every round",
                  "TARGET|MODULE:APP")  # fmt: skip
    from mrtr.inspect._cli import add_inspect_flags

    add_inspect_flags(inspect)
    SUBPARSERS["demo"] = sub.add_parser(
        "demo", help="run a multi-round call against the bundled demo server"
    )
    SUBPARSERS["demo-server"] = sub.add_parser(
        "demo-server", help="serve the bundled demo server on stdio"
    )
    worker = sub.add_parser(
        "worker", help="run the task bodies of module:app (an MCPServer) until SIGTERM"
    )
    worker.add_argument("app", metavar="MODULE:APP")
    worker.add_argument("--lease", type=float, default=None, metavar="SECONDS")
    worker.add_argument("--max-tasks", type=int, default=None, metavar="N")
    SUBPARSERS["worker"] = worker
    help_parser = sub.add_parser("help", help="show the help of mrtr or of one COMMAND")
    help_parser.add_argument("topic", nargs="?", metavar="COMMAND")
    return parser


def default_prog() -> str:
    """``python -m mrtr`` when run as a module, else ``mrtr``."""
    return "python -m mrtr" if sys.argv and sys.argv[0].endswith("__main__.py") else "mrtr"
