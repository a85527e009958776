"""The public surface: one lazy-import mechanism, honest ``__all__`` lists."""

from __future__ import annotations

import ast
import importlib
import inspect
import subprocess
import sys
from pathlib import Path

import pytest

import mrtr
from mrtr._lazy import export_order

PACKAGES = ["mrtr", "mrtr.paused", "mrtr.session", "mrtr.types", "mrtr.transports", "mrtr.server"]
PUBLIC_MODULES = [
    *PACKAGES,
    "mrtr.client",
    "mrtr.errors",
    "mrtr.server.stdio",
    "mrtr.transports.http",
]


def _type_checking_imports(package: str) -> dict[str, set[str]]:
    """``{module: names}`` imported under ``if TYPE_CHECKING:`` in the package's __init__."""
    source = Path(importlib.import_module(package).__file__ or "").read_text(encoding="utf-8")
    found: dict[str, set[str]] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom), ast.unparse(statement)
                for alias in statement.names:
                    # `name as name`: an explicit re-export for type checkers
                    assert alias.asname == alias.name, ast.unparse(statement)
                    found.setdefault(statement.module or "", set()).add(alias.name)
    return found


@pytest.mark.parametrize("package", PACKAGES)
def test_type_checking_block_and_lazy_table_agree(package: str) -> None:
    module = importlib.import_module(package)
    table = {name: set(names) for name, names in module._EXPORTS.items()}
    assert _type_checking_imports(package) == table
    assert set(module.__all__) == set().union(*table.values())


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_all_is_sorted_unique_and_importable(name: str) -> None:
    module = importlib.import_module(name)
    exported = list(module.__all__)
    assert exported == sorted(set(exported), key=export_order)
    for attribute in exported:
        value = getattr(module, attribute)
        assert value is not None or attribute.isupper(), attribute
        if inspect.isclass(value) and issubclass(value, BaseException):
            assert issubclass(value, mrtr.MRTRError), f"{name}.{attribute}"
    assert set(exported) <= set(dir(module))


@pytest.mark.parametrize("package", PACKAGES)
def test_unknown_names_raise_attribute_error(package: str) -> None:
    module = importlib.import_module(package)
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = module.no_such_name


def test_the_flow_and_its_actions_are_public_in_one_place() -> None:
    from mrtr import DispatchInputs, Finish, FlowState, InputRequiredFlow, Retry, Wait

    flow = InputRequiredFlow()
    assert isinstance(flow.state, FlowState)
    for action in (DispatchInputs, Finish, Retry, Wait):
        assert action.__module__ == "mrtr"  # where it is imported from


def test_types_hold_wire_models_and_constants_only() -> None:
    import mrtr.types as types

    private = {"RESULT_MODELS", "INPUT_REQUEST_METHODS", "INPUT_RESPONSE_MODELS", "TypedRequest"}
    # a notification is a wire model the message handler receives; the other envelopes
    # (requests, responses) are never handed to users
    envelopes = {"JSONRPC_VERSION", "JSONRPCNotification"}
    for name in types.__all__:
        assert not name.endswith("_ADAPTER"), name
        assert not name.startswith("JSONRPC") or name in envelopes, name
        assert name not in private, name


def test_one_version_source() -> None:
    from importlib.metadata import version

    from mrtr._version import __version__

    assert mrtr.__version__ == __version__ == version("mrtr")


def test_importing_mrtr_loads_no_submodule_it_does_not_need() -> None:
    code = (
        "import sys, mrtr; "
        "loaded = sorted(m for m in sys.modules if m.startswith('mrtr')); "
        "print(','.join(loaded))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().split(",") == ["mrtr", "mrtr._lazy", "mrtr._version"]


def test_paused_calls_have_their_own_namespace_and_stay_in_mrtr() -> None:
    import mrtr.paused

    for name in mrtr.paused.__all__:
        assert getattr(mrtr.paused, name) is getattr(mrtr, name), name


def test_the_session_package_still_has_the_names_of_the_session_module() -> None:
    # `mrtr.session` was the module of ClientSession; what it held can still be imported
    import mrtr.session
    import mrtr.session._legs
    from mrtr.session import ProgressCallback, call_params  # noqa: F401

    assert mrtr.session.call_params is mrtr.session._legs.call_params
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = mrtr.session.no_such_name  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", [*PUBLIC_MODULES, "mrtr.auth"])
def test_public_classes_and_functions_carry_their_public_module(name: str) -> None:
    module = importlib.import_module(name)
    for attribute in module.__all__:
        value = getattr(module, attribute)
        if not (inspect.isclass(value) or inspect.isfunction(value)):
            continue
        home = value.__module__
        where = f"{name}.{attribute} says {home}.{value.__qualname__}"
        assert not any(part.startswith("_") for part in home.split(".")), where
        assert getattr(importlib.import_module(home), value.__name__) is value, where


def test_an_exception_prints_its_public_name_without_the_package_imported() -> None:
    script = (
        "from mrtr.server._mcpserver._errors import InvalidSignature\n"
        "import traceback\n"
        "print(traceback.format_exception_only(InvalidSignature('bad'))[-1].strip())\n"
        "import pickle\n"
        "print(type(pickle.loads(pickle.dumps(InvalidSignature('bad')))).__qualname__)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["mrtr.server.InvalidSignature: bad", "InvalidSignature"]
