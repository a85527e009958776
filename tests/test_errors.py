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
