"""``mrtr inspect TARGET``: resolve the target as the other commands do, then serve the page.

Besides the CLI's targets (a URL, a configured name, ``demo``, a ``.py`` file, a command
after ``--``), ``module:attr`` names an mrtr server object in this process (an
``MCPServer`` or a low-level ``Server``): the inspector talks to it without a transport,
and an exported test drives it with the server testing kit.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import os
import re
import sys
from typing import Any

from mrtr.cli._exit import USAGE, CLIError, UsageError, exit_code_for
from mrtr.cli._safe import say

__all__ = ["add_inspect_flags", "find_app", "run_inspect"]

_APP = re.compile(r"^([A-Za-z_][\w.]*):([A-Za-z_]\w*)$")
CONFIG_SOURCES = frozenset({"config", "mrtr", "vscode", "cursor", "windsurf"})
"""SOURCE:NAME prefixes of configured servers: ``mrtr:NAME`` is a server of mrtr's own
config file, never the attribute NAME of the ``mrtr`` package."""


def _seconds(text: str) -> float:
    from mrtr.cli._args import _seconds as seconds

    return seconds(text)


def _port(text: str) -> int:
    """A TCP port (0: any free one)."""
    if not text.isdigit() or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"must be a port number 0-65535, not {text!r}")
    return int(text)


def _roots(given: list[str]) -> list[dict[str, str]]:
    """The ``--root`` values as roots; an empty one or a malformed URI is a usage error."""
    from mrtr.cli._answering import root_list

    for root in given:
        if not root.strip():
            raise UsageError("--root needs a path or a URI")
        if "://" in root and not re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://\S*$", root):
            raise UsageError(f"--root {root!r} is not a URI")
    return root_list(given)


REDIS_SOCKET_TIMEOUT = 10.0
"""Seconds one Redis command may take (its thread cannot be cancelled)."""


def _store(path: str | None) -> Any:
    """``--store``: a SQLite file or a ``redis://`` URL, opened as its store (checked first)."""
    if path is None:
        return None
    if re.match(r"^rediss?://", path, re.I):
        try:
            import redis
        except ImportError:
            raise UsageError("--store redis://...: redis is not installed (mrtr[redis])") from None
        from mrtr.paused import RedisPausedCallStore

        try:
            client = redis.Redis.from_url(path, socket_timeout=REDIS_SOCKET_TIMEOUT)
        except ValueError as exc:
            raise UsageError(f"--store: {exc}") from None
        return RedisPausedCallStore(client)
    from pathlib import Path

    file = Path(path)
    if file.is_dir() or not file.parent.is_dir():
        raise UsageError(f"--store {path!r}: not a file in an existing folder")
    from mrtr.paused import SqlitePausedCallStore

    return SqlitePausedCallStore(file)


def _explainer(opts: argparse.Namespace) -> Any:
    """``--keys FILE`` / ``--keys-env NAME``: a `StateExplainer`, or ``None``."""
    keys_file, keys_env = getattr(opts, "keys", None), getattr(opts, "keys_env", None)
    if keys_file is None and keys_env is None:
        return None
    try:
        import cryptography  # noqa: F401  (the keys are opened with the server's codec)
    except ImportError:
        raise UsageError("--keys needs mrtr[server] (the server's codec)") from None
    from mrtr.inspect._explain import StateExplainer, keys_from_env, keys_from_file

    try:
        if keys_env is not None:
            security = keys_from_env(keys_env)
        else:
            from pathlib import Path

            try:
                text = Path(str(keys_file)).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise UsageError(f"--keys {keys_file}: cannot read it ({exc})") from None
            security = keys_from_file(text, source=f"--keys {keys_file}")
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return StateExplainer(security, audience=opts.audience)


def add_inspect_flags(parser: argparse.ArgumentParser) -> None:
    """The flags of ``mrtr inspect`` beyond the connection flags."""
    group = parser.add_argument_group("inspector")
    group.add_argument(
        "--port", type=_port, default=0, help="port on 127.0.0.1 (default: a free one)"
    )
    group.add_argument("--no-browser", action="store_true", help="print the URL, open nothing")
    group.add_argument(
        "--store",
        metavar="FILE",
        help="a store of paused calls (a SQLite FILE or a redis:// URL) to list, answer"
        " and resume on the page",
    )
    group.add_argument(
        "--serve-for",
        type=_seconds,
        metavar="S",
        help="stop after S seconds (default: serve until Ctrl-C)",
    )
    group.add_argument(
        "--root", action="append", default=[], metavar="PATH", help="a root offered (repeatable)"
    )
    keys = group.add_mutually_exclusive_group()
    keys.add_argument(
        "--keys",
        metavar="FILE",
        help="the server's requestState keys (hex, label:hex, comma- or line-separated, as"
        " MRTR_KEYS holds them): a refused state is decoded here and its reason shown",
    )
    keys.add_argument(
        "--keys-env",
        metavar="NAME",
        help="the same keys from the environment variable NAME (for example MRTR_KEYS)",
    )
    group.add_argument(
        "--audience",
        metavar="NAME",
        help="the audience the server checks (default: its name, as an mrtr server's is)",
    )


def find_app(word: str) -> tuple[Any, dict[str, str]] | None:
    """The server object ``module:attr`` names, and how a test imports it; else ``None``.

    Raises:
        UsageError: the module exists but has no such attribute, or it is no server.
    """
    match = _APP.match(word)
    if match is None or word.endswith((".json", ".jsonc")) or match[1] in CONFIG_SOURCES:
        return None
    module_name, attr = match[1], match[2]
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        if importlib.util.find_spec(module_name) is None:
            return None
    except (ImportError, ValueError):
        return None
    module = importlib.import_module(module_name)
    app = getattr(module, attr, None)
    if app is None:
        raise UsageError(f"{module_name} has no {attr!r}")
    if not hasattr(app, "client_transport"):
        raise UsageError(f"{word} is not an mrtr server (it has no client_transport())")
    return app, {"kind": "app", "module": module_name, "attr": attr}


def _open_browser(url: str) -> None:
    """Open the page when this machine has a graphical browser (never a terminal one)."""
    if sys.platform.startswith("linux") and not (
        os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
    ):
        return
    import webbrowser

    with contextlib.suppress(webbrowser.Error):
        webbrowser.open(url)


def _connection(
    opts: argparse.Namespace, server_command: list[str]
) -> tuple[Any, str, dict[str, Any]]:
    """What the client connects to, the page's label for it, and the export's source."""
    words = list(opts.words)
    if len(words) > (0 if server_command else 1):
        raise UsageError("inspect takes one TARGET (or a command after --)")
    if not server_command and words:
        found = find_app(words[0])
        if found is not None:
            return found[0], words[0], found[1]
    from mrtr.cli._commands import Context
    from mrtr.cli._connect import ServerStderr, build_transport
    from mrtr.cli._render import Output

    ctx = Context(opts, server_command, Output(mode="text", terminal=None, verbose=opts.verbose))
    ctx.resolve(words)
    target = ctx.target
    assert target is not None
    sink = ServerStderr(passthrough=opts.server_stderr or opts.verbose >= 2)
    described = target.describe()
    if target.transport == "http":
        source: dict[str, Any] = {"kind": "http", "url": described.get("url")}
    else:
        source = {"kind": "stdio", "command": described.get("command")}
    return build_transport(target, opts, sink), target.label, source


def _prepare(opts: argparse.Namespace, server_command: list[str]) -> tuple[Any, str, Any]:
    """The client's target, the page's label, and the inspector (its store, its keys)."""
    from mrtr.inspect._inspector import Inspector

    target, label, source = _connection(opts, server_command)
    roots, explainer = _roots(opts.root), _explainer(opts)
    store = _store(opts.store)  # opened last: nothing after it can refuse the flags
    inspector = Inspector(label=label, roots=roots, source=source, store=store, explainer=explainer)
    if source.get("kind") != "app":  # a server in process explains itself, from its log
        target = inspector.watch(target)
    return target, label, inspector


def run_inspect(opts: argparse.Namespace, server_command: list[str]) -> int:
    """Connect, serve the page until interrupted; the exit code."""
    import anyio

    async def go() -> int:
        from mrtr.client import Client

        target, label, inspector = _prepare(opts, server_command)
        store = inspector.store
        client = Client(
            target,
            mode=opts.mode,
            read_timeout_seconds=opts.request_timeout,
            call_timeout=opts.timeout,
            **inspector.client_options(),
        )
        async with contextlib.AsyncExitStack() as stack:
            if store is not None:
                stack.push_async_callback(store.aclose)
            await stack.enter_async_context(client)
            url = await stack.enter_async_context(inspector.running(client, port=opts.port))
            say(f"mrtr inspect: {label} on {url}")
            say("  (the page's token is in the address: keep it to yourself; Ctrl-C stops)")
            if not opts.no_browser:
                _open_browser(url)
            if opts.serve_for is None:
                await anyio.sleep_forever()
            await anyio.sleep(opts.serve_for)
        return 0

    try:
        return anyio.run(go, backend=opts.backend or os.environ.get("MRTR_BACKEND") or "asyncio")
    except KeyboardInterrupt:
        return 0
    except (CLIError, UsageError) as exc:
        say(f"mrtr inspect: {exc}")
        return getattr(exc, "exit_code", USAGE)
    except Exception as exc:
        inner = exc
        while isinstance(getattr(inner, "exceptions", None), tuple) and len(inner.exceptions) == 1:  # type: ignore[attr-defined]
            inner = inner.exceptions[0]  # type: ignore[attr-defined]
        if isinstance(inner, KeyboardInterrupt):
            return 0
        say(f"mrtr inspect: {inner}")
        return exit_code_for(inner)
