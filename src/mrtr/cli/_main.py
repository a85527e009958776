"""The entry point: parse, run one command on an event loop, map the outcome to an exit code."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import Any

from mrtr.cli._exit import INTERRUPTED, USAGE, CLIError, UsageError, exit_code_for
from mrtr.cli._safe import say

__all__ = ["main"]


def _unwrap(exc: BaseException) -> BaseException:
    """The one real error inside nested exception groups, if there is exactly one."""
    inner = getattr(exc, "exceptions", None)  # an ExceptionGroup (a backport on 3.10)
    while isinstance(inner, tuple) and len(inner) == 1 and isinstance(inner[0], BaseException):
        exc = inner[0]
        inner = getattr(exc, "exceptions", None)
    return exc


def _interactive(opts: argparse.Namespace) -> bool:
    from mrtr.cli._terminal import Terminal

    if opts.no_input or os.environ.get("CI"):
        return False
    return Terminal.available()


def _context(opts: argparse.Namespace, server_command: list[str]) -> Any:
    from mrtr.cli._commands import Context
    from mrtr.cli._render import Output
    from mrtr.cli._terminal import Terminal

    color = {"always": True, "never": False}.get(opts.color)
    terminal = Terminal(color=color) if _interactive(opts) else None
    output = Output(mode=opts.output, terminal=terminal, verbose=opts.verbose)
    return Context(opts, server_command, output)


def _attach_answerer(ctx: Any) -> None:
    """The answer sources of this command (flags and files are checked here, up front)."""
    from mrtr.cli._answering import SAMPLING_CMD_TIMEOUT, Answerer
    from mrtr.cli._answers import AnswerBook, Recorder, check_writable

    opts, output = ctx.opts, ctx.output
    if opts.unanswered == "pause" and not opts.pause:
        raise UsageError("--unanswered pause needs --pause FILE (where to write the call)")
    for flag, path in (("--record-answers", opts.record_answers), ("--pause", opts.pause),
                       ("--trace-file", getattr(opts, "trace_file", None))):  # fmt: skip
        if path and path != "-":
            check_writable(path, flag)
    if opts.sampling_cmd is not None:
        import shlex

        try:
            if not shlex.split(opts.sampling_cmd):
                raise ValueError("it is empty")
        except ValueError as exc:
            raise UsageError(f"--sampling-cmd {opts.sampling_cmd!r}: {exc}") from None
    book = AnswerBook()
    book.add_flags(opts.answer, opts.accept, opts.decline, opts.cancel)
    if opts.answers:
        book.add_file(opts.answers)
    policy = opts.unanswered or ("pause" if opts.pause else book.otherwise or "fail")
    server = ctx.target.label if ctx.target is not None else "server"
    ctx.answerer = Answerer(
        book=book,
        server=server,
        terminal=output.terminal,
        recorder=Recorder(opts.record_answers) if opts.record_answers else None,
        sampling_cmd=opts.sampling_cmd,
        sampling_timeout=opts.sampling_timeout or SAMPLING_CMD_TIMEOUT,
        roots=opts.root,
        policy=policy,
        on_event=output.event,
    )
    output.header["answers"] = ctx.answerer.answered  # who answered what, filled as it goes


def _show_transport_warnings(output: Any) -> Callable[[], None]:
    """The transports' warnings (a stdio server writing non-JSON ...) shown, made safe."""
    import logging

    class ToOutput(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            output.note(f"mrtr: warning: {record.getMessage()}")

    transports = logging.getLogger("mrtr.transports")
    handler = ToOutput(logging.WARNING)
    transports.addHandler(handler)
    return lambda: transports.removeHandler(handler)


def _server_exit(ctx: Any, exc: BaseException) -> BaseException:
    """A failed stdio connection whose server has exited: say so, with its exit code."""
    from mrtr.errors import TransportError

    returncode = getattr(getattr(ctx, "transport", None), "returncode", None)
    if returncode is None or not isinstance(exc, TransportError):
        return exc
    from mrtr.cli._exit import ServerExitedError

    how = (
        f"was killed by signal {-returncode}"
        if returncode < 0
        else f"exited with code {returncode}"
    )
    label = ctx.target.label if ctx.target is not None else "the server"
    return ServerExitedError(f"the server ({label}) {how}", details=str(exc))


def _reworded(exc: BaseException) -> BaseException:
    """A library error whose message names library parameters, in the CLI's own words."""
    from mrtr import errors

    if isinstance(exc, errors.InputRequiredRoundsExceededError):
        from mrtr.cli._exit import RoundsExceededError

        return RoundsExceededError(
            f"the server still asked for input after {exc.max_rounds} rounds;"
            " raise --max-rounds if the call needs more"
        )
    if isinstance(exc, errors.EraProbeTimeoutError):
        from mrtr.cli._exit import ConnectTimeoutError

        return ConnectTimeoutError(
            f"the server answered neither server/discover nor initialize within {exc.timeout:g} s;"
            " if it is an older MCP server, use --mode legacy (or raise --probe-timeout)"
        )
    if isinstance(exc, errors.MCPError) and _wants_roots(exc):
        return errors.MCPError(exc.code, _NO_ROOTS, exc.data, method=exc.method)
    return exc


_NO_ROOTS = (
    "the server asked for the client's roots (roots/list) and none were offered:"
    " pass --root PATH (repeatable; a directory or a file:// URI)"
)


def _wants_roots(exc: Any) -> bool:
    """A refusal that only ``--root`` avoids: the roots capability was never declared.

    A 2026-07-28 server refuses with -32021 naming ``roots``; a back-channel server
    passes on the client's own "List roots not supported" answer.
    """
    from mrtr.types import MISSING_REQUIRED_CLIENT_CAPABILITY

    if exc.code == MISSING_REQUIRED_CLIENT_CAPABILITY:
        data = exc.data if isinstance(exc.data, dict) else {}
        required = data.get("requiredCapabilities")
        return isinstance(required, dict) and "roots" in required
    return "List roots not supported" in exc.message


def _root_cause(ctx: Any, exc: BaseException) -> BaseException:
    """The failure to report: what the command line knows caused the library's error."""
    answerer = getattr(ctx, "answerer", None)
    exc = _reworded(exc)
    if ctx is not None:
        exc = _server_exit(ctx, exc)
    if answerer is not None and answerer.failure is not None:
        exc = answerer.failure  # the back-channel refusal it caused is only a consequence
    elif ctx is not None and ctx.target is not None and ctx.target.transport == "http":
        from mrtr.cli._auth import login_hint

        exc = login_hint(exc, ctx.target)
    if answerer is not None and answerer.unanswered and not isinstance(exc, CLIError):
        from mrtr.cli._exit import InputUnansweredError

        keys = ", ".join(answerer.unanswered)
        exc = InputUnansweredError(
            f"the server asked for input nobody answered ({keys}), then failed: {exc}",
            pending=answerer.unanswered,
        )
    return exc


def _scrub(ctx: Any, text: str) -> str:
    """A message with the target URL's secrets (userinfo, ?api_key=...) redacted."""
    url = getattr(getattr(ctx, "target", None), "url", None)
    if not url:
        return text
    from mrtr.cli._config import redact_url

    return text.replace(url, redact_url(url))


def _report(ctx: Any, exc: BaseException) -> int:
    """Print a failure the way the output mode asks; returns its exit code."""
    exc = _root_cause(ctx, exc)
    code = exit_code_for(exc)
    message = _scrub(ctx, str(exc) or type(exc).__name__)
    parts: dict[str, Any] = {"error": {"type": type(exc).__name__}}
    details = getattr(exc, "details", None)
    details = _scrub(ctx, details) if details else details
    if details:
        parts["error"]["details"] = details
    if getattr(exc, "code", None) is not None and not isinstance(exc, CLIError):
        parts["error"]["code"] = exc.code  # type: ignore[attr-defined]
        if getattr(exc, "data", None) is not None:
            parts["error"]["data"] = exc.data  # type: ignore[attr-defined]
    result = getattr(exc, "result", None)
    if isinstance(exc, CLIError) and result is not None:
        parts["result"] = result  # a finished call's kept result (resume refused)
    pending = getattr(exc, "pending", None)
    if pending:
        parts["pending"] = {"inputRequests": pending}
    sink = getattr(ctx, "sink", None) if ctx is not None else None
    if ctx is None:
        say(f"mrtr: {message}")
        return code
    ctx.output.failure(code, message, **parts)
    if details and ctx.output.mode not in ("json", "jsonl"):
        say(f"  {details}")
    from mrtr.cli._url_required import describe, required_urls

    urls = required_urls(exc)
    if urls and ctx.output.mode not in ("json", "jsonl"):
        say(describe(urls))
    if code == 4 and sink is not None and sink.tail:
        say("\n".join(["the server's last stderr lines:", *(f"  [server] {x}" for x in sink.tail)]))
    return code


def _help(parser: argparse.ArgumentParser, topic: str | None) -> int:
    """``mrtr help [COMMAND]``."""
    from mrtr.cli._args import SUBPARSERS

    if topic is None:
        parser.print_help()
        return 0
    if topic not in SUBPARSERS:
        import difflib

        close = difflib.get_close_matches(topic, list(SUBPARSERS), n=1)
        hint = f"; did you mean {close[0]}?" if close else f"; one of {', '.join(SUBPARSERS)}"
        say(f"mrtr help: no command {topic!r}{hint}")
        return USAGE
    SUBPARSERS[topic].print_help()
    return 0


def _backend(opts: argparse.Namespace) -> str:
    """The event loop to run on (checked: a typo or a missing trio is a usage error)."""
    backend = opts.backend or os.environ.get("MRTR_BACKEND") or "asyncio"
    if backend not in ("asyncio", "trio"):
        raise UsageError(f"MRTR_BACKEND must be asyncio or trio, not {backend!r}")
    if backend == "trio":
        try:
            import trio  # noqa: F401  (the run needs it anyway)
        except ImportError:
            where = "--backend trio" if opts.backend else "MRTR_BACKEND=trio"
            raise UsageError(f"{where}: trio is not installed (pip install 'mrtr[trio]')") from None
    return backend


def _quiet_library(verbose: int) -> None:
    """The library's log: shown with -vv; otherwise outcomes are reported, not logged."""
    import logging

    if verbose >= 2:
        logging.basicConfig(level=logging.WARNING, format="[mrtr %(levelname)s] %(message)s")
    else:
        library_log = logging.getLogger("mrtr")
        library_log.addHandler(logging.NullHandler())
        library_log.propagate = False


def _run(opts: argparse.Namespace, server_command: list[str]) -> int:
    try:
        backend = _backend(opts)
    except UsageError as bad:
        return _report(None, bad)
    _quiet_library(opts.verbose)
    from mrtr.cli._url_required import RETRIES, ask_retry

    for attempt in range(RETRIES + 1):
        failure: list[BaseException] = []
        code = _run_once(opts, server_command, backend, failure)
        urls = _urls_of(failure)
        if not urls or attempt == RETRIES or not _interactive(opts):
            return code
        if not ask_retry(urls, color={"always": True, "never": False}.get(opts.color)):
            return code
    return code


def _urls_of(failure: list[BaseException]) -> list[Any]:
    from mrtr.cli._url_required import required_urls

    return required_urls(failure[0]) if failure else []


def _run_once(
    opts: argparse.Namespace, server_command: list[str], backend: str, failure: list[BaseException]
) -> int:
    """Run the command once; what ended it goes into `failure`."""
    import anyio

    ctx = None

    async def go() -> int:
        nonlocal ctx
        from mrtr.cli._commands import run_server_command

        ctx = _context(opts, server_command)
        handler = _show_transport_warnings(ctx.output) if opts.verbose < 2 else None
        try:
            _attach_answerer(ctx)
            return await run_server_command(ctx)
        finally:
            terminal = ctx.output.terminal
            if terminal is not None:
                terminal.close()
            if handler is not None:
                handler()

    try:
        return anyio.run(go, backend=backend)
    except KeyboardInterrupt:
        print("\nmrtr: interrupted", file=sys.stderr)
        return INTERRUPTED
    except BaseException as raised:  # every outcome becomes an exit code here
        exc = _unwrap(raised)
        if isinstance(exc, KeyboardInterrupt):
            print("\nmrtr: interrupted", file=sys.stderr)
            return INTERRUPTED
        if isinstance(exc, SystemExit):
            raise
        if exit_code_for(exc) == 1:
            import traceback

            traceback.print_exception(exc)
        failure.append(exc)
        return _report(ctx, exc)


def _parse(parser: argparse.ArgumentParser, words: list[str]) -> argparse.Namespace:
    """Parse; a server command's words and flags may be interleaved (``call T tool -v k=v``)."""
    from mrtr.cli._args import SUBPARSERS

    first = next((i for i, word in enumerate(words) if not word.startswith("-")), None)
    if first is None or words[first] not in SUBPARSERS or first != 0:
        return parser.parse_args(words)
    opts = SUBPARSERS[words[first]].parse_intermixed_args(words[first + 1 :])
    opts.command, opts.version = words[first], False
    return opts


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``mrtr`` command; returns the exit code."""
    try:
        return _main(argv)
    except BrokenPipeError:  # `mrtr ... | head`: the reader left; nothing more to say
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1


def _main(argv: list[str] | None) -> int:
    from mrtr.cli._args import build_parser, default_prog, split_server_command

    words, server_command = split_server_command(list(sys.argv[1:] if argv is None else argv))
    parser = build_parser(default_prog())
    if _wants_json(words):
        return _parse_for_json(parser, words, server_command)
    try:
        opts = _parse(parser, words)
    except SystemExit as stop:
        return USAGE if stop.code not in (0, None) else 0
    return _dispatch(parser, opts, server_command)


def _worker(opts: argparse.Namespace) -> int:
    """``mrtr worker module:app``: the app's own ``run_worker`` (the CLI imports no server)."""
    import importlib

    module_name, _, attribute = opts.app.partition(":")
    if not module_name or not attribute:
        say(f"mrtr worker: expected MODULE:APP, got {opts.app!r}")
        return USAGE
    if opts.lease is not None and not 0 < opts.lease < float("inf"):
        say("mrtr worker: --lease takes a positive number of seconds")
        return USAGE
    if opts.max_tasks is not None and opts.max_tasks < 1:
        say("mrtr worker: --max-tasks takes a number of at least 1")
        return USAGE
    sys.path.insert(0, os.getcwd())
    try:
        found: Any = importlib.import_module(module_name)
        for part in attribute.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError) as exc:
        say(f"mrtr worker: cannot load {opts.app}: {exc}")
        return USAGE
    if not callable(getattr(found, "run_worker", None)):
        say(f"mrtr worker: {opts.app} is not an MCPServer (it has no run_worker)")
        return USAGE
    options = {"lease": opts.lease, "max_tasks": opts.max_tasks}
    found.run_worker(**{k: v for k, v in options.items() if v is not None})
    return 0


def _demo(command: str) -> int:
    """``mrtr demo`` (a call against the bundled server) or ``mrtr demo-server`` (that server)."""
    from mrtr._demo import server_extra_missing

    missing = server_extra_missing()
    if missing is not None:
        say(f"mrtr {command}: {missing}")
        return USAGE
    if command == "demo":
        import anyio

        from mrtr._demo import run_demo

        return anyio.run(run_demo)
    from mrtr._demo import build_demo_server

    build_demo_server().run_stdio()
    return 0


def _wants_json(words: list[str]) -> bool:
    pairs = zip(words, [*words[1:], ""], strict=False)
    return (
        "--json" in words
        or any(a in ("-o", "--output") and b in ("json", "jsonl") for a, b in pairs)
        or any(w in ("-ojson", "--output=json", "-ojsonl", "--output=jsonl") for w in words)
    )


def _parse_for_json(
    parser: argparse.ArgumentParser, words: list[str], server_command: list[str]
) -> int:
    """Parse with ``--json`` asked: a usage error is one JSON document too."""
    import contextlib
    import io
    import json

    errors = io.StringIO()
    try:
        with contextlib.redirect_stderr(errors):
            opts = _parse(parser, words)
    except SystemExit as stop:
        if stop.code in (0, None):
            return 0
        message = errors.getvalue().strip().splitlines()[-1] if errors.getvalue() else "usage"
        error = {"exit": USAGE, "kind": "usage", "message": message}
        doc = {"format": "mrtr.result/1", "status": "error", "error": error, "exit": USAGE}
        print(json.dumps(doc, indent=2))
        print(json.dumps({"error": error}), file=sys.stderr)
        return USAGE
    return _dispatch(parser, opts, server_command)


def _dispatch(
    parser: argparse.ArgumentParser, opts: argparse.Namespace, server_command: list[str]
) -> int:
    """Run the parsed command."""
    if opts.version:
        from mrtr import __version__

        print(f"mrtr {__version__}")
        return 0
    if opts.command is None:
        parser.print_usage(sys.stderr)
        say("mrtr: give a COMMAND (mrtr help lists them; mrtr help COMMAND shows one)")
        return USAGE
    if opts.command == "help":
        return _help(parser, opts.topic)
    if opts.command in ("call", "prompt") and opts.tool_help:
        needed = 1 if server_command else 2
        if len(opts.words) < needed:
            from mrtr.cli._args import SUBPARSERS

            SUBPARSERS[opts.command].print_help()
            return 0
    return _serve_or_run(opts, server_command)


def _serve_or_run(opts: argparse.Namespace, server_command: list[str]) -> int:
    """The commands that serve (the demo, a worker, the inspector), list, or talk to a server."""
    if opts.command in ("demo", "demo-server"):
        return _demo(opts.command)
    if opts.command == "worker":
        return _worker(opts)
    if opts.command == "inspect":
        from mrtr.inspect._cli import run_inspect

        return run_inspect(opts, server_command)
    if opts.command == "servers":
        from mrtr.cli._commands import list_servers

        try:
            return list_servers(opts)
        except CLIError as exc:
            say(f"mrtr: {exc}")
            return exc.exit_code
    return _run(opts, server_command)
