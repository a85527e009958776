"""`HandlerSpec`: one decorated function, analysed once (its arguments model, its resolvers)."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from mrtr.server._mcpserver._errors import InvalidSignature
from mrtr.server._mcpserver._resolve._graph import Plan, build_plan
from mrtr.server._mcpserver._resolve._signature import Param, analyse
from mrtr.types._validation import first_errors

__all__ = ["HandlerSpec", "describe_validation"]

Kind = Literal["tool", "prompt", "resource"]


_NAMED = 128  # characters of a location (a key of the client's own may be long)
_DESCRIBED = 10  # errors named in a message: the client may have sent a million wrong items


def describe_validation(exc: ValidationError) -> str:
    """A validation error as field names and messages, never the rejected values.

    The first few only (the rest are counted): every error made an object and a part
    of the message, so a list of a million wrong items cost seconds and a message
    twenty times its size.
    """
    parts = []
    for error in first_errors(exc, _DESCRIBED):
        where = ".".join(str(p) for p in error["loc"]) or "arguments"
        parts.append(f"{where[:_NAMED]}: {error['msg']}")
    more = exc.error_count() - len(parts)
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")


@dataclass(frozen=True, slots=True)
class HandlerSpec:
    """A tool, prompt or resource function, as the engine runs it.

    Attributes:
        fn: the function.
        name: the tool or prompt name, or the resource URI (template).
        kind: ``tool``, ``prompt`` or ``resource``.
        is_async: whether it is ``async def``.
        params: its classified parameters.
        plan: its resolver graph, or ``None``.
        context_params: the names that get the `Context`.
        arguments_model: validates the client's arguments (resolved and context
            parameters are not in it: a client-sent value for them is ignored).
        argument_names: the names of the parameters the client supplies.
    """

    fn: Any
    name: str
    kind: Kind
    is_async: bool
    params: tuple[Param, ...]
    plan: Plan | None
    context_params: tuple[str, ...]
    arguments_model: type[BaseModel]
    argument_names: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """``tool 'provision'`` and the like."""
        return f"{self.kind} {self.name!r}"

    @classmethod
    def build(
        cls,
        fn: Any,
        name: str,
        kind: Kind,
        *,
        by_name: set[str] | None = None,
        localns: dict[str, Any] | None = None,
    ) -> HandlerSpec:
        """Analyse `fn` (raises `InvalidSignature` for what cannot be honoured)."""
        if not callable(fn):
            raise InvalidSignature(f"the {kind} {name!r} is not callable")
        params = analyse(fn, owner=name, localns=localns)
        arguments = [p for p in params if p.kind == "argument"]
        names = {p.name for p in arguments} if by_name is None else by_name
        plan = build_plan(name, params, names, kind, localns)
        fields: dict[str, Any] = {}
        for param in arguments:
            default = ... if param.default is inspect.Parameter.empty else param.default
            fields[param.name] = (param.annotation, default)
        try:
            model = create_model(
                f"{name}Arguments",
                __config__=ConfigDict(extra="ignore", arbitrary_types_allowed=True),
                **fields,
            )
        except Exception as exc:
            raise InvalidSignature(
                f"the arguments of {kind} {name!r} cannot be described: {exc}"
            ) from exc
        return cls(
            fn=fn,
            name=name,
            kind=kind,
            is_async=inspect.iscoroutinefunction(fn),
            params=tuple(params),
            plan=plan,
            context_params=tuple(p.name for p in params if p.kind == "context"),
            arguments_model=model,
            argument_names=tuple(p.name for p in arguments),
        )

    def param(self, name: str) -> Param:
        """The parameter called `name`."""
        for param in self.params:
            if param.name == name:
                return param
        raise KeyError(name)

    @property
    def argument_params(self) -> list[Param]:
        """The parameters the client supplies."""
        return [p for p in self.params if p.kind == "argument"]

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """The client's arguments, validated, by parameter name (raises ValidationError)."""
        instance = self.arguments_model.model_validate(arguments)
        return {name: getattr(instance, name) for name in self.argument_names}

    def input_schema(self) -> dict[str, Any]:
        """The JSON Schema of the arguments."""
        schema: dict[str, Any] = self.arguments_model.model_json_schema()
        return schema
