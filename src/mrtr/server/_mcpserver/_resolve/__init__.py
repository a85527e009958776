"""Decoration time: what a decorated function is, checked once when it is registered.

`_signature` (its parameters: arguments, `Context`, resolved), `_graph` (the resolver
graph, in layers), `_handler` (`HandlerSpec`: the function, its plan and its validator).
"""
