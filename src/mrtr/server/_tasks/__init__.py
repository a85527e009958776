"""The server half of the Tasks extension: the store contract, two stores, the runner.

Kept in a package of its own so that a server without tasks never imports it.
"""
