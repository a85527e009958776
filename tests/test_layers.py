"""The module map's arrows point one way (docs/internals.md): no import goes up a layer."""

from __future__ import annotations

import ast
from pathlib import Path

import mrtr

SRC = Path(mrtr.__file__).parent

# lowest first; a module may import from its own layer and the ones below
LAYERS: list[set[str]] = [
    {
        "mrtr.errors",
        "mrtr._otel",
        "mrtr.types",
        "mrtr._session_context",
        "mrtr._anyio",
        "mrtr._lazy",
        "mrtr._version",
        "mrtr._stray",
        "mrtr._defaults",
    },
    {"mrtr.transports", "mrtr.auth"},  # auth: an httpx.Auth the HTTP transport is given
    {"mrtr._jsonrpc", "mrtr._jsonrpc_wire"},
    {"mrtr._events", "mrtr._listen", "mrtr._cache"},
    {
        "mrtr._legs",
        "mrtr._envelope",
        "mrtr._backchannel",
        "mrtr._callbacks",
        "mrtr._session_era",
        "mrtr._session_lists",
        "mrtr._session_negotiated",
    },
    {"mrtr.session"},
    {"mrtr._driver", "mrtr._driver_flow", "mrtr._paused"},
    {"mrtr._paused_store", "mrtr._store_sqlite", "mrtr._store_redis"},
    {
        "mrtr._calls",
        "mrtr._tracing",
        "mrtr._negotiate",
        "mrtr._paused_client",
        "mrtr._client_events",
    },
    {"mrtr._client_requests"},  # the Client's lists, pings and resumes, mixed into it
    {"mrtr.client", "mrtr._client_settings"},  # its settings read the Client they check
    {"mrtr.__main__", "mrtr._demo", "mrtr.cli"},  # the command line, on the public API
]
# Annotations only (under TYPE_CHECKING): the context a callback gets names its session.
TYPE_ONLY_EXCEPTIONS = {
    ("mrtr._session_context", "mrtr.session"),
    ("mrtr._backchannel", "mrtr.session"),
}


def _layer_of(module: str) -> int | None:
    if module == "mrtr" or module.startswith("mrtr.server"):
        return None
    for rank, members in enumerate(LAYERS):
        if any(module == m or module.startswith(m + ".") for m in members):
            return rank
    raise AssertionError(f"{module} is on no layer of the module map")


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("mrtr"):
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("mrtr"))
    return found


def test_no_module_imports_a_higher_layer() -> None:
    upward = []
    for path in sorted(SRC.rglob("*.py")):
        module = _module_name(path)
        own = _layer_of(module)
        if own is None:
            continue
        for target in _imports(path):
            rank = _layer_of(target)
            if rank is None:
                # the command line's demo is a bundled server: the one allowed user
                if target.startswith("mrtr.server") and module != "mrtr._demo":
                    upward.append(f"{module} -> {target} (the client never imports the server)")
                continue
            if rank > own and (module, target) not in TYPE_ONLY_EXCEPTIONS:
                upward.append(f"{module} -> {target}")
    assert upward == []


def test_no_module_is_over_the_size_budget() -> None:
    # ~500 lines per module (STYLE: one module per idea); the error tree is one module
    # by rule.
    budget = {
        "mrtr.transports.http": 540,
        "mrtr.errors": 760,
        "mrtr._jsonrpc": 510,  # tracing, and the caller's request ids of subscriptions/listen
    }
    over = []
    for path in sorted(SRC.rglob("*.py")):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > budget.get(_module_name(path), 500):
            over.append(f"{_module_name(path)}: {lines}")
    assert over == []
