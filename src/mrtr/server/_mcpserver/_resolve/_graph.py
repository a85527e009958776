"""The resolver graph of one handler, checked at registration.

Every resolver a handler depends on (directly or through other resolvers) becomes a
`Node`; the nodes are grouped in layers by depth, so that the engine can run the
independent ones of a layer concurrently. Each check here fails at decoration with
`InvalidSignature`, never mid-call: an unresolvable parameter, a cycle, two questions in
one resolver's return type, a form type the elicitation schema cannot carry, a key used
by two resolvers.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, TypeVar, get_args, get_origin

from mrtr.server._mcpserver._asks import Elicit, Resolve, form_of, identity, marker_arms
from mrtr.server._mcpserver._errors import InvalidSignature
from mrtr.server._mcpserver._resolve._signature import Param, analyse, hints_of

__all__ = ["Node", "Plan", "build_plan"]


def _label(fn: Any) -> str:
    return str(getattr(fn, "__qualname__", None) or getattr(fn, "__name__", repr(fn)))


@dataclass(eq=False, slots=True)
class Node:
    """One resolver of a handler's graph.

    Attributes:
        fn: the resolver.
        key: its question key (``Resolve(key=)`` or the resolver's name).
        params: its classified parameters.
        deps: for each resolved parameter, the node that fills it.
        is_async: whether calling it gives an awaitable.
        depth: 0 for a resolver without resolver dependencies, else 1 + the deepest.
        waits: whether its coroutine was seen to wait before returning (``None``: not
            run yet). The engine runs a layer's resolvers one after the other while at
            most one of them may wait, and in a task group otherwise.
    """

    fn: Any
    key: str
    params: list[Param]
    deps: dict[str, Node] = field(default_factory=dict)
    is_async: bool = False
    depth: int = 0
    waits: bool | None = None


@dataclass(frozen=True, slots=True)
class Plan:
    """A handler's resolvers: the layers to run and which parameter each node fills.

    Attributes:
        layers: the nodes by depth (a layer's nodes are independent of each other).
        consumers: for each resolved parameter of the handler, its node.
        fills: ``(parameter, node, wants_outcome)`` for each consumer (worked out once).
        keys: every node's key, shallowest first (the order questions are asked in).
    """

    layers: tuple[tuple[Node, ...], ...]
    consumers: dict[str, Node]
    fills: tuple[tuple[str, Node, bool], ...] = ()
    keys: tuple[str, ...] = ()

    @property
    def nodes(self) -> list[Node]:
        """Every node, shallowest first."""
        return [node for layer in self.layers for node in layer]


def _is_async(fn: Any) -> bool:
    call = getattr(fn, "__call__", None)  # noqa: B004 (a callable object's async __call__)
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(call)


def _check_return(fn: Any, label: str, localns: dict[str, Any] | None) -> None:
    annotation = hints_of(fn, localns).get("return")
    if annotation is None:
        return
    arms = marker_arms(annotation)
    if len(arms) > 1:
        raise InvalidSignature(
            f"Resolver {label!r} return annotation has multiple Elicit/Sample/ListRoots arms; "
            "a resolver asks one question - split it into separate resolvers"
        )
    if arms and get_origin(arms[0]) is Elicit:
        (question_type,) = get_args(arms[0]) or (None,)
        if (
            question_type is not None
            and question_type is not Any
            and not isinstance(question_type, TypeVar)
        ):
            try:
                form_of(question_type)
            except InvalidSignature as exc:
                raise InvalidSignature(f"Resolver {label!r}: {exc}") from None


def _check_parameters(label: str, params: list[Param], arguments: set[str], owner: str) -> None:
    for param in params:
        if param.kind == "argument" and param.name not in arguments:
            raise InvalidSignature(
                f"Resolver {label!r} parameter {param.name!r} cannot be resolved: expected a "
                f"Context, an Annotated[_, Resolve(...)], or an argument of {owner} by name"
            )


def build_plan(
    handler: str,
    params: list[Param],
    arguments: set[str],
    what: str,
    localns: dict[str, Any] | None = None,
) -> Plan | None:
    """The resolver graph of a handler, or ``None`` when it has no resolved parameter.

    Args:
        handler: the handler's name (for errors).
        params: the handler's classified parameters.
        arguments: the names a resolver may take by name (tool or prompt arguments, URI
            variables).
        what: ``tool``, ``prompt`` or ``resource`` (for errors).
        localns: the namespace the decorator was called in (string annotations).

    Raises:
        InvalidSignature: see the module docstring.
    """
    nodes: dict[Any, Node] = {}
    keys: dict[str, Node] = {}
    visiting: set[Any] = set()

    def visit(marker: Resolve) -> Node:
        ident = identity(marker.fn)
        known = nodes.get(ident)
        if known is not None:
            return known
        label = _label(marker.fn)
        if ident in visiting:
            raise InvalidSignature(f"Resolver {label!r} has a cyclic dependency")
        visiting.add(ident)
        own = analyse(marker.fn, owner=label, localns=localns)
        key = marker.key or str(getattr(marker.fn, "__name__", label))
        node = Node(marker.fn, key, own, is_async=_is_async(marker.fn))
        _check_parameters(label, own, arguments, f"{what} {handler!r}")
        for param in own:
            if param.kind == "resolved":
                assert param.resolve is not None
                node.deps[param.name] = visit(param.resolve)
        _check_return(marker.fn, label, localns)
        node.depth = 1 + max((dep.depth for dep in node.deps.values()), default=-1)
        visiting.discard(ident)
        other = keys.get(key)
        if other is not None:
            raise InvalidSignature(
                f"{what} {handler!r}: resolvers {_label(other.fn)!r} and {label!r} share the "
                f"question key {key!r}; give one Resolve(..., key=...)"
            )
        keys[key] = node
        nodes[ident] = node
        return node

    consumers: dict[str, Node] = {}
    fills: list[tuple[str, Node, bool]] = []
    for param in params:
        if param.kind == "resolved":
            assert param.resolve is not None
            consumers[param.name] = visit(param.resolve)
            fills.append((param.name, consumers[param.name], param.wants_outcome))
    if not consumers:
        return None
    depth = max(node.depth for node in nodes.values())
    layers = tuple(
        tuple(node for node in nodes.values() if node.depth == level) for level in range(depth + 1)
    )
    order = tuple(node.key for layer in layers for node in layer)
    return Plan(layers=layers, consumers=consumers, fills=tuple(fills), keys=order)
