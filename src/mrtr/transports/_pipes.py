"""The asyncio pipes' old address, for the server's stdio until it imports them from their home.

The pipes live in `mrtr.transports._backends.asyncio._pipes`; nothing on the client
side imports this module.
"""

from mrtr.transports._backends.asyncio._pipes import AsyncioPipeReader, FdWriter, OneAtATime

__all__ = ["AsyncioPipeReader", "FdWriter", "OneAtATime"]
