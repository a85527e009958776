"""`InputCallbacks`: the client's answers to input requests, in one value for both eras.

The same callbacks answer a modern `InputRequiredResult` (the `Client` loop, through
the driver) and a legacy server request on the back-channel (the session). This value
holds them, derives the capabilities they allow the client to advertise, and routes one
input request to its callback.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mrtr import types as _types  # lazy names; cheaper per call than a `from` import
from mrtr.session._context import (
    ClientRequestContext,
    ElicitationCallback,
    ListRootsCallback,
    SamplingCallback,
)
from mrtr.types._constants import INVALID_REQUEST

if TYPE_CHECKING:
    from mrtr.transports import JSONObject
    from mrtr.types import ErrorData, InputRequest, InputResponse

__all__ = ["InputCallbacks"]

_NOT_SUPPORTED = {
    "elicitation/create": "Elicitation not supported",
    "sampling/createMessage": "Sampling not supported",
    "roots/list": "List roots not supported",
}
_URL_MODE_NOT_SUPPORTED = "URL-mode elicitation not supported"


@dataclass(frozen=True, slots=True)
class InputCallbacks:
    """The callbacks that answer input requests, and what they can do.

    Attributes:
        elicitation: answers ``elicitation/create``.
        sampling: answers ``sampling/createMessage``.
        list_roots: answers ``roots/list``.
        url_mode: the elicitation callback handles URL mode too.
        sampling_tools: the sampling callback handles tool-enabled sampling.
    """

    elicitation: ElicitationCallback | None = None
    sampling: SamplingCallback | None = None
    list_roots: ListRootsCallback | None = None
    url_mode: bool = False
    sampling_tools: bool = False

    def capabilities(self) -> JSONObject:
        """The client capabilities these callbacks allow (nothing they cannot do)."""
        capabilities: JSONObject = {}
        if self.elicitation is not None:
            capabilities["elicitation"] = {"form": {}, "url": {}} if self.url_mode else {"form": {}}
        if self.sampling is not None:
            capabilities["sampling"] = {"tools": {}} if self.sampling_tools else {}
        if self.list_roots is not None:
            capabilities["roots"] = {}
        return capabilities

    async def call(self, request: InputRequest, context: ClientRequestContext) -> Any:
        """Call the callback for one input request's kind; its answer is not checked.

        Returns:
            What the callback returned, or `ErrorData` with ``"Elicitation not
            supported"`` (resp. sampling, list roots) when there is no such callback, or
            ``"URL-mode elicitation not supported"`` for a URL-mode request when URL mode
            was not enabled (it was not advertised either).

        Raises:
            Exception: whatever the callback raised, unchanged.
        """
        method = request.method
        if isinstance(request, _types.ElicitRequest):
            if self.elicitation is None:
                return _types.ErrorData(code=INVALID_REQUEST, message=_NOT_SUPPORTED[method])
            if isinstance(request.params, _types.ElicitRequestURLParams) and not self.url_mode:
                # Not advertised, so the callback was never promised to handle it.
                return _types.ErrorData(code=INVALID_REQUEST, message=_URL_MODE_NOT_SUPPORTED)
            return await self.elicitation(context, request.params)
        if isinstance(request, _types.CreateMessageRequest):
            if self.sampling is None:
                return _types.ErrorData(code=INVALID_REQUEST, message=_NOT_SUPPORTED[method])
            return await self.sampling(context, request.params)
        if self.list_roots is None:
            return _types.ErrorData(code=INVALID_REQUEST, message=_NOT_SUPPORTED[method])
        return await self.list_roots(context)

    async def answer(
        self, request: InputRequest, context: ClientRequestContext
    ) -> InputResponse | ErrorData:
        """Call the callback for one input request and check its answer.

        Returns:
            The checked answer, or `ErrorData` (the callback declined, or there is no
            callback for this kind).

        Raises:
            InvalidInputResponseError: the callback answered with the wrong kind.
            Exception: whatever the callback raised, unchanged.
        """
        from mrtr.types import ErrorData, validate_input_response

        answer = await self.call(request, context)
        if isinstance(answer, ErrorData):
            return answer
        return validate_input_response(request.method, answer, key=context.key)
