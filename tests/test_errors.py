from __future__ import annotations

import inspect

import pytest

import mrtr
from mrtr import errors
from mrtr._lazy import export_order


def test_every_exported_exception_derives_from_the_root() -> None:
    exported = [getattr(mrtr, name) for name in mrtr.__all__]
    exceptions = [
        obj for obj in exported if inspect.isclass(obj) and issubclass(obj, BaseException)
    ]
    assert exceptions, "the public API exports exceptions"
    for exc in exceptions:
        assert issubclass(exc, mrtr.MRTRError), exc


def test_errors_module_all_is_sorted_and_complete() -> None:
    assert errors.__all__ == sorted(errors.__all__)
    defined = {
        name
        for name, obj in vars(errors).items()
        if inspect.isclass(obj)
        and issubclass(obj, BaseException)
        and obj.__module__ == errors.__name__
    }
    assert defined == set(errors.__all__)


def test_public_all_is_sorted_and_resolves() -> None:
    assert list(mrtr.__all__) == sorted(mrtr.__all__, key=export_order)
    for name in mrtr.__all__:
        assert getattr(mrtr, name) is not None


def test_rejected_request_state_is_the_specific_error() -> None:
    from mrtr.types import ErrorData

    err = errors.MCPError.from_error_data(
        ErrorData(code=-32602, message="Invalid or expired requestState"), method="tools/call"
    )
    assert isinstance(err, errors.RequestStateRejectedError)
    other = errors.MCPError.from_error_data(ErrorData(code=-32602, message="bad"))
    assert type(other) is errors.MCPError
    assert other.error.code == -32602


def test_timeouts_are_builtin_timeout_errors() -> None:
    request = errors.RequestTimeoutError("tools/call", 7, 2.5)
    deadline = errors.DeadlineExceededError(3.0)
    for error in (request, deadline):
        assert isinstance(error, TimeoutError) and isinstance(error, errors.MRTRError)
    with pytest.raises(TimeoutError, match=r"tools/call \(id 7\) within 2.5 s"):
        raise request
    with pytest.raises(TimeoutError, match="3 s deadline"):
        raise deadline
    assert isinstance(deadline, errors.InputRequiredError)
    assert (request.method, request.request_id, request.timeout) == ("tools/call", 7, 2.5)


def test_misuse_is_a_builtin_runtime_error() -> None:
    error = errors.ClientStateError("the client is closed")
    assert isinstance(error, RuntimeError) and isinstance(error, errors.MRTRError)
    with pytest.raises(RuntimeError, match="closed"):
        raise error


def _drawing() -> list[tuple[str, str]]:
    """``(class, drawn parent)`` for each class of the tree in the module docstring, in order."""
    import re

    lines = (errors.__doc__ or "").split("```")[1].strip("\n").splitlines()
    root = lines[0].split()[0]
    drawn = [(root, "Exception")]
    ancestry = [root]  # by depth: the classes the line being read hangs under
    for line in lines[1:]:
        match = re.match(r"^((?:[│ ]   )*)[├└]── ([A-Z]\w+)", line)
        if match is None:
            continue  # a description's second line
        depth = len(match.group(1)) // 4 + 1
        del ancestry[depth:]
        drawn.append((match.group(2), ancestry[-1]))
        ancestry.append(match.group(2))
    return drawn


def test_the_drawing_is_the_tree_and_the_file_follows_it() -> None:
    drawn = _drawing()
    defined = [
        obj
        for obj in vars(errors).values()
        if inspect.isclass(obj)
        and issubclass(obj, BaseException)
        and obj.__module__ == errors.__name__
    ]
    # in the order the file defines them (a module's namespace keeps definition order)
    assert [cls.__name__ for cls in defined] == [name for name, _ in drawn]
    for cls, (name, parent) in zip(defined, drawn, strict=True):
        # the first base is the drawn parent; a second one is a builtin (TimeoutError...)
        assert cls.__bases__[0].__name__ == parent, name
        assert all(base.__module__ == "builtins" for base in cls.__bases__[1:]), name
