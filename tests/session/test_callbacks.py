"""`InputCallbacks`: the capabilities callbacks allow, and one input request answered."""

from __future__ import annotations

from typing import Any

import pytest

from mrtr.errors import InvalidInputResponseError
from mrtr.session import ClientRequestContext
from mrtr.session._callbacks import InputCallbacks
from mrtr.types import ElicitRequest, ElicitResult, ErrorData, ListRootsRequest

pytestmark = pytest.mark.anyio


async def _elicit(ctx: ClientRequestContext, params: Any) -> Any:
    return ElicitResult(action="accept", content={"region": "eu"})


async def _wrong(ctx: ClientRequestContext) -> Any:
    return ElicitResult(action="cancel")


def test_capabilities_follow_the_callbacks() -> None:
    assert InputCallbacks().capabilities() == {}
    both = InputCallbacks(elicitation=_elicit, url_mode=True, list_roots=_wrong)
    assert both.capabilities() == {"elicitation": {"form": {}, "url": {}}, "roots": {}}
    sampling = InputCallbacks(sampling=_elicit, sampling_tools=True)  # type: ignore[arg-type]
    assert sampling.capabilities() == {"sampling": {"tools": {}}}


async def test_one_request_is_routed_checked_or_refused() -> None:
    context: Any = ClientRequestContext(session=None)  # type: ignore[arg-type]
    form = ElicitRequest.model_validate(
        {"method": "elicitation/create", "params": {"message": "?", "requestedSchema": {}}}
    )
    url = ElicitRequest.model_validate(
        {
            "method": "elicitation/create",
            "params": {"mode": "url", "message": "?", "url": "https://e", "elicitationId": "1"},
        }
    )
    roots = ListRootsRequest(method="roots/list")
    callbacks = InputCallbacks(elicitation=_elicit, list_roots=_wrong)
    answer = await callbacks.answer(form, context)
    assert isinstance(answer, ElicitResult) and answer.content == {"region": "eu"}
    refused = await callbacks.answer(url, context)  # URL mode was not enabled
    assert isinstance(refused, ErrorData) and "URL-mode" in refused.message
    assert isinstance(await callbacks.call(roots, context), ElicitResult)  # unchecked
    with pytest.raises(InvalidInputResponseError):
        await callbacks.answer(roots, context)  # checked: the wrong kind
    missing = await InputCallbacks().answer(roots, context)
    assert isinstance(missing, ErrorData) and missing.message == "List roots not supported"
