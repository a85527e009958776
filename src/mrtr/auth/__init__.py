"""OAuth 2.1 for remote MCP servers: ``Client(url, auth=OAuth(...))``.

Imported only when used: ``from mrtr import Client`` does not load it. Signing client
assertions (``private_key_jwt``) needs ``cryptography`` (``pip install 'mrtr[auth]'``).

```python
from mrtr import Client
from mrtr.auth import AuthorizationCode, FileStore, LoopbackAuthorizer, OAuth

auth = OAuth(grant=AuthorizationCode(LoopbackAuthorizer()), store=FileStore("tokens.json"))
async with Client("https://example.com/mcp", auth=auth) as client:
    ...
```
"""

from __future__ import annotations

from mrtr.auth._authorizers import (
    AuthorizationRequest,
    Authorizer,
    FollowRedirectAuthorizer,
    LoopbackAuthorizer,
    PasteAuthorizer,
)
from mrtr.auth._flow import exchange_id_token
from mrtr.auth._grants import (
    AssertionContext,
    AuthorizationCode,
    ClientCredentials,
    ClientProfile,
    Grant,
    IdentityAssertion,
    JWTBearer,
    StaticClient,
)
from mrtr.auth._jose import SigningKey
from mrtr.auth._keyring import KeyringStore
from mrtr.auth._oauth import OAuth
from mrtr.auth._records import ClientRegistration, Discovery, TokenSet
from mrtr.auth._stores import FileStore, MemoryStore, TokenStore

__all__ = [
    "AssertionContext",
    "AuthorizationCode",
    "AuthorizationRequest",
    "Authorizer",
    "ClientCredentials",
    "ClientProfile",
    "ClientRegistration",
    "Discovery",
    "FileStore",
    "FollowRedirectAuthorizer",
    "Grant",
    "IdentityAssertion",
    "JWTBearer",
    "KeyringStore",
    "LoopbackAuthorizer",
    "MemoryStore",
    "OAuth",
    "PasteAuthorizer",
    "SigningKey",
    "StaticClient",
    "TokenSet",
    "TokenStore",
    "exchange_id_token",
]
