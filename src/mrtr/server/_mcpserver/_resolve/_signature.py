"""What a decorated function's parameters are: the `Context`, resolved values, arguments.

Read once, at decoration. A `Resolve` inside a union (``Annotated[T, Resolve(f)] | None``)
is refused: the engine could not tell which arm the value belongs to.
"""

from __future__ import annotations

import inspect
import sys
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union, get_args, get_origin, get_type_hints

from mrtr.server._mcpserver._asks import Resolve
from mrtr.server._mcpserver._errors import InvalidSignature
from mrtr.server._mcpserver._outcomes import is_outcome_annotation

__all__ = ["Param", "analyse", "caller_namespace", "declares_input_required", "hints_of"]

ParamKind = Literal["context", "resolved", "argument"]


@dataclass(frozen=True, slots=True)
class Param:
    """One parameter of a handler or resolver, classified.

    Attributes:
        name: the parameter's name.
        kind: ``context`` (gets the `Context`), ``resolved`` (filled by a resolver) or
            ``argument`` (a handler argument: from the client; for a resolver, by name).
        annotation: the type, without the ``Annotated`` wrapper of a resolved value.
        default: the default, or ``inspect.Parameter.empty``.
        resolve: the `Resolve` marker of a resolved parameter.
        wants_outcome: annotated ``ElicitationResult[T]``: gets the outcome, not the data.
    """

    name: str
    kind: ParamKind
    annotation: Any
    default: Any
    resolve: Resolve | None = None
    wants_outcome: bool = False


def hints_of(fn: Any, localns: dict[str, Any] | None = None) -> dict[str, Any]:
    """The function's resolved annotations, ``Annotated`` kept (a bad one is InvalidSignature).

    `localns` is the namespace the decorator was called in, so that string annotations
    (``from __future__ import annotations``) may name functions local to it.
    """
    target = fn.__call__ if not inspect.isroutine(fn) and callable(fn) else fn
    try:
        return get_type_hints(target, localns=localns, include_extras=True)
    except Exception as exc:
        raise InvalidSignature(f"cannot read the annotations of {_name(fn)!r}: {exc}") from exc


def _name(fn: Any) -> str:
    return str(getattr(fn, "__name__", None) or type(fn).__name__)


def _is_context(annotation: Any) -> bool:
    from mrtr.server._mcpserver._rounds._context import Context

    return isinstance(annotation, type) and issubclass(annotation, Context)


def _resolve_of(annotation: Any) -> tuple[Any, Resolve] | None:
    if get_origin(annotation) is Annotated:
        inner, *metadata = get_args(annotation)
        for item in metadata:
            if isinstance(item, Resolve):
                return inner, item
    return None


def _union_hides_resolve(annotation: Any) -> bool:
    import types

    if get_origin(annotation) not in (Union, types.UnionType):
        return False
    return any(_resolve_of(arm) is not None for arm in get_args(annotation))


def analyse(fn: Any, *, owner: str, localns: dict[str, Any] | None = None) -> list[Param]:
    """Classify every parameter of `fn` (`owner` names it in errors).

    Raises:
        InvalidSignature: ``*args``/``**kwargs``, or a `Resolve` hidden in a union.
    """
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise InvalidSignature(f"cannot read the signature of {owner!r}: {exc}") from exc
    hints = hints_of(fn, localns)
    params: list[Param] = []
    for name, parameter in signature.parameters.items():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise InvalidSignature(
                f"{owner!r} takes *{name}: declare each argument by name so it can be described"
            )
        annotation = hints.get(name, Any)
        if _union_hides_resolve(annotation):
            raise InvalidSignature(
                f"Parameter {name!r} of {owner!r} wraps `Resolve(...)` in a union; annotate the "
                "parameter directly as `Annotated[T, Resolve(...)]`"
            )
        resolved = _resolve_of(annotation)
        if resolved is not None:
            inner, marker = resolved
            params.append(
                Param(
                    name,
                    "resolved",
                    inner,
                    parameter.default,
                    resolve=marker,
                    wants_outcome=is_outcome_annotation(inner),
                )
            )
        elif _is_context(annotation):
            params.append(Param(name, "context", annotation, parameter.default))
        else:
            params.append(Param(name, "argument", annotation, parameter.default))
    return params


def caller_namespace() -> dict[str, Any] | None:
    """The locals of the code that called the decorator factory (two frames up)."""
    frame = sys._getframe(2)
    return None if frame.f_locals is frame.f_globals else dict(frame.f_locals)


def declares_input_required(annotation: Any) -> bool:
    import types
    from typing import Annotated, Union, get_args, get_origin

    from mrtr.types import InputRequiredResult

    if annotation is InputRequiredResult:
        return True
    origin = get_origin(annotation)
    if origin is Annotated:
        return declares_input_required(get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        return any(declares_input_required(arm) for arm in get_args(annotation))
    value = getattr(annotation, "__value__", None)  # a PEP 695 alias
    return value is not None and declares_input_required(value)
