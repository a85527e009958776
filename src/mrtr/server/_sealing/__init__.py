"""Sealed request state: the security policy, its codec and the replay stores.

The lowest room of `server/` (with `_defaults`): the core applies the policy, the policy
never calls the core (a handler's context is named for types only).
"""
