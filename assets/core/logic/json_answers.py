"""Finding and rejecting the JSON object in a model's answer, for every pipeline that asks a model for one.

Models often wrap JSON in code fences or put a sentence before it, so the object is looked for rather than the
whole text parsed; a truncated answer fails as ``invalid_json`` instead of yielding one of its inner objects.
"""

from __future__ import annotations

import json
import re
from typing import Any

INVALID_JSON = "invalid_json"


class SchemaError(ValueError):
    """A model answer that does not meet its schema; ``reason_code`` is a stable code of the caller's schema."""

    def __init__(self, reason_code: str, detail: str) -> None:
        super().__init__(f"{reason_code}: {detail}")
        self.reason_code = reason_code
        self.detail = detail


# A "{" that opens a JSON object (a key or an empty object follows); other braces are taken for prose.
_OBJECT_START = re.compile(r"\{\s*[\"}]")


def extract_json_object(text: str) -> dict[str, Any]:
    """The first complete JSON object in ``text``, ignoring fences and prose around it.

    Only braces that look like an object start are tried, so a truncated answer fails as ``invalid_json``
    instead of quietly yielding one of its inner objects.
    """
    decoder = json.JSONDecoder()
    for match in re.finditer(r"\{", text):
        start = match.start()
        try:
            value, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError as exc:
            if _OBJECT_START.match(text, start):
                raise SchemaError(INVALID_JSON, f"the JSON object at character {start} does not parse "
                                                f"({exc.msg} at character {exc.pos})") from None
            continue
        return value
    raise SchemaError(INVALID_JSON, "no JSON object found in the answer")
