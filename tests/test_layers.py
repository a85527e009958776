"""The packages are the layers (docs/internals.md): no import goes up a layer.

Every import counts, at the top of a module, inside a function or under
``TYPE_CHECKING``: a reader follows all three. Inside one package imports go either way.
"""

from __future__ import annotations

import ast
from pathlib import Path

import mrtr

SRC = Path(mrtr.__file__).parent

# lowest first; a package may import from its own layer and the ones below
LAYERS: list[set[str]] = [
    {"mrtr.types", "mrtr.errors", "mrtr._anyio", "mrtr._lazy", "mrtr._otel", "mrtr._version"},
    {"mrtr._wire"},  # no I/O: shared by the client and the server halves
    {"mrtr.transports", "mrtr.auth"},  # auth: what the HTTP transport is given
    {"mrtr.session"},
    {"mrtr.flow"},
    {"mrtr.paused"},
    {"mrtr.client"},
    # the command line, on the public API; `mrtr inspect` is one of its commands
    {"mrtr.cli", "mrtr.__main__", "mrtr._demo", "mrtr.inspect"},
]
SERVER = "mrtr.server"  # beside the client side: it may use the layers up to transports
SERVER_REACH = 2
DEMO = "mrtr._demo"  # the command line's demo is a bundled server: the one client-side user
# `mrtr inspect --keys` opens a server's refused state with the server's own codec and
# envelope rules (never a copy of them): the only other one, and only in this module
KEYS = "mrtr.inspect._explain"


def _layer_of(module: str) -> int | None:
    if module == "mrtr" or module.startswith(SERVER):
        return None
    for rank, members in enumerate(LAYERS):
        if any(module == m or module.startswith(m + ".") for m in members):
            return rank
    raise AssertionError(f"{module} is on no layer of the package map")


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


def _arrows() -> list[tuple[str, str]]:
    return [
        (_module_name(path), target)
        for path in sorted(SRC.rglob("*.py"))
        for target in sorted(_imports(path))
    ]


def test_no_module_imports_a_higher_layer() -> None:
    upward = []
    for module, target in _arrows():
        own, rank = _layer_of(module), _layer_of(target)
        if own is None or rank is None:
            continue
        if rank > own:
            upward.append(f"{module} -> {target}")
    assert upward == []


def test_the_client_side_never_imports_the_server() -> None:
    found = [
        f"{module} -> {target}"
        for module, target in _arrows()
        if target.startswith(SERVER)
        and _layer_of(module) is not None
        and module not in (DEMO, KEYS)
    ]
    assert found == []


def test_the_server_uses_the_layers_below_the_session_only() -> None:
    found = [
        f"{module} -> {target}"
        for module, target in _arrows()
        if module.startswith(SERVER)
        and (rank := _layer_of(target)) is not None
        and rank > SERVER_REACH
    ]
    assert found == []


def test_at_most_eight_loose_modules_at_the_top() -> None:
    loose = sorted(path.name for path in SRC.glob("*.py"))
    assert len(loose) <= 8, loose


CLIENT_CORE = (
    "mrtr._wire",
    "mrtr.transports",
    "mrtr.session",
    "mrtr.flow",
    "mrtr.paused",
    "mrtr.client",
)


def _runtime_imports(path: Path) -> set[str]:
    """The modules `path` imports when it runs (at the top or in a function), not for types."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and ast.unparse(child.test) == "TYPE_CHECKING":
                continue
            if isinstance(child, ast.ImportFrom) and (child.module or "").startswith("mrtr"):
                module = child.module or ""
                submodules = [f"{module}.{alias.name}" for alias in child.names]
                found.update(m for m in submodules if m in MODULES)
                if not all(m in MODULES for m in submodules):
                    found.add(module)
            elif isinstance(child, ast.Import):
                found.update(a.name for a in child.names if a.name.startswith("mrtr"))
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return found


MODULES = {_module_name(path): path for path in SRC.rglob("*.py")}


def test_no_import_circle_inside_the_client_core_at_run_time() -> None:
    core = {m for m in MODULES if m.startswith(CLIENT_CORE)}
    graph = {m: {t for t in _runtime_imports(MODULES[m]) if t in core and t != m} for m in core}
    done: set[str] = set()

    def walk(module: str, trail: list[str]) -> None:
        if module in trail:
            raise AssertionError(" -> ".join([*trail[trail.index(module) :], module]))
        if module in done:
            return
        for target in sorted(graph[module]):
            walk(target, [*trail, module])
        done.add(module)

    for module in sorted(core):
        walk(module, [])


# inside `server/` its folders are the layers, lowest first; rooms on one floor are siblings
# that never import each other. `_mcpserver` takes its floor when it moves.
SERVER_LAYERS: list[set[str]] = [
    {"mrtr.server._defaults"},  # imports nothing
    {"mrtr.server._sealing"},  # the request-state policy, its codec, the replay stores
    {"mrtr.server._core"},  # one message in, its answer out, on any transport
    # the shells, and beside them the Tasks runner: it uses the core (a task's request, the
    # hub it tells); the core only reads a request's capabilities and `Server` builds it
    {"mrtr.server._stream", "mrtr.server._http", "mrtr.server._tasks"},
    {"mrtr.server", "mrtr.server._server", "mrtr.server.stdio"},  # `Server` and the exports
    {"mrtr.server._mcpserver"},  # `MCPServer`, a `Server` with the engine and decorators
]


def _server_room(module: str) -> tuple[int, str]:
    for rank, rooms in enumerate(SERVER_LAYERS):
        for room in rooms:
            if module == room or (room != SERVER and module.startswith(room + ".")):
                return rank, room
    raise AssertionError(f"{module} is in no room of the server map")


def test_every_module_of_the_server_is_in_a_room() -> None:
    for module in MODULES:
        if module.startswith(SERVER):
            _server_room(module)


def test_no_import_inside_the_server_runs_back_up() -> None:
    """What runs (at the top or in a function) goes down; a type named for a hint may not.

    An annotation-only import under ``TYPE_CHECKING`` is left out here: the sealing policy
    names the handler's context in its hook signatures, and that is no arrow at run time.
    """
    upward = []
    for module, path in sorted(MODULES.items()):
        own = module.startswith(SERVER) and _server_room(module)
        if not own:
            continue
        for target in sorted(_runtime_imports(path)):
            there = target.startswith(SERVER) and _server_room(target)
            if not there:
                continue
            if there[0] > own[0] or (there[0] == own[0] and there[1] != own[1]):
                upward.append(f"{module} -> {target}")
    assert upward == []


def test_at_most_four_loose_modules_at_the_top_of_the_server() -> None:
    loose = sorted(path.name for path in (SRC / "server").glob("*.py"))
    assert len(loose) <= 4, loose


# The code that knows its event loop, by name: the shortcuts through loop internals in
# `_wire/_speedups` and the client's asyncio protocols in `transports/_backends/asyncio/`
# (each with its on/off test); `_anyio` only asks which loop runs (`in_asyncio_task`); and
# a server shell whose host runs only on asyncio and owns the loop it runs the app on
# (mangum drives the ASGI app).
LOOP_AWARE = (
    "mrtr._wire._speedups",
    "mrtr.transports._backends.asyncio",
    "mrtr._anyio",
    "mrtr.server._http._lambda",
)


def test_only_the_named_places_import_asyncio() -> None:
    found = []
    for module, path in sorted(MODULES.items()):
        if module.startswith(LOOP_AWARE):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            found += [f"{module} -> {n}" for n in names if n.split(".")[0] == "asyncio"]
    assert found == []


# inside `_mcpserver/` its rooms are its layers too, lowest first. A tool call runs down
# them: routes, the entry of its kind, one call of the rounds, the engine. Decoration time
# (`_resolve`) sits above request time (`_rounds`): a signature recognises `Context`, and
# the engine runs the plan a `HandlerSpec` carries (naming its types for hints only).
MCPSERVER = "mrtr.server._mcpserver"
MCPSERVER_LAYERS: list[set[str]] = [
    {f"{MCPSERVER}._errors", f"{MCPSERVER}._outcomes"},  # what a handler raises and gets back
    {f"{MCPSERVER}._answer"},  # an answer checked against its form
    {f"{MCPSERVER}._asks"},  # the questions (`Elicit`, `Sample`, `ListRoots`, `Resolve`)
    {f"{MCPSERVER}._spec"},  # `AppSpec`: the app as a request sees it
    {f"{MCPSERVER}._rounds"},  # request time: the call, the engine, the round, `Context`
    {f"{MCPSERVER}._resolve"},  # decoration time: the signature, the graph, `HandlerSpec`
    {f"{MCPSERVER}._entries"},  # a tool, a prompt, a resource; the registry
    {f"{MCPSERVER}._routes"},  # the low-level server's handlers
    {f"{MCPSERVER}._testing"},  # the kit for server authors
    {f"{MCPSERVER}._app", MCPSERVER},  # `MCPServer`: a registry and its spec
]
# the app's own module, and the kit that drives an app, are the only ones to name it
NAMES_THE_APP = (f"{MCPSERVER}._app", f"{MCPSERVER}._testing", "mrtr.server")


def _mcpserver_room(module: str) -> tuple[int, str]:
    for rank, rooms in enumerate(MCPSERVER_LAYERS):
        for room in rooms:
            if module == room or (room != MCPSERVER and module.startswith(room + ".")):
                return rank, room
    raise AssertionError(f"{module} is in no room of the MCPServer map")


def _mcpserver_modules() -> list[str]:
    return sorted(m for m in MODULES if m == MCPSERVER or m.startswith(MCPSERVER + "."))


def test_every_module_of_mcpserver_is_in_a_room() -> None:
    for module in _mcpserver_modules():
        _mcpserver_room(module)


def test_no_import_inside_mcpserver_runs_back_up() -> None:
    upward = []
    for module in _mcpserver_modules():
        own = _mcpserver_room(module)
        for target in sorted(_runtime_imports(MODULES[module])):
            if not target.startswith(MCPSERVER + "."):
                continue
            there = _mcpserver_room(target)
            if there[0] > own[0] or (there[0] == own[0] and there[1] != own[1]):
                upward.append(f"{module} -> {target}")
    assert upward == []


def test_only_the_app_and_the_testing_kit_name_mcpserver() -> None:
    # every import counts here, hints included: below the app, code gets an `AppSpec`
    found = [
        module
        for module, target in _arrows()
        if target == f"{MCPSERVER}._app" and module not in NAMES_THE_APP
    ]
    assert found == []


def test_no_module_of_mcpserver_reads_anothers_private_members() -> None:
    # ``app._tools``, ``ctx._round``, ``request._backchannel``: a seam with a name instead
    found = []
    for module in _mcpserver_modules():
        if module == f"{MCPSERVER}._app":
            continue
        tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
        own = {"self", "cls"} | {  # and a module's documented internals (``sys._getframe``)
            (alias.asname or alias.name).split(".")[0]
            for node in ast.walk(tree)
            if isinstance(node, ast.Import)
            for alias in node.names
        }
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and not (isinstance(node.value, ast.Name) and node.value.id in own)
            ):
                found.append(f"{module}:{node.lineno} {ast.unparse(node)}")
    assert found == []
