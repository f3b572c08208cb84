"""pygls' protocol, with one fix: a request whose params do not deserialize gets an answer.

pygls logs the error and shows "Error in server" but never answers the request, so the client
waits forever. Here the request gets the JSON-RPC InvalidParams error it is owed.
"""

from __future__ import annotations

import logging
from typing import Any

from pygls.exceptions import JsonRpcException
from pygls.protocol import LanguageServerProtocol

log = logging.getLogger(__name__)


class SpecProtocol(LanguageServerProtocol):
    def structure_message(self, data: dict[str, Any]) -> Any:
        try:
            return super().structure_message(data)
        except JsonRpcException as error:
            if "id" in data and "method" in data:
                log.warning(
                    "request %r (%s) has invalid params: answered with an error",
                    data["id"],
                    data["method"],
                )
                self._send_response(data["id"], error=error.to_response_error())
            raise
