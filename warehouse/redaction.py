"""Credentials in URLs, removed before anything is logged, stored or exported.

People put keys in endpoints (``https://user:KEY@host/v1``, ``…/v1?key=KEY``), and an endpoint travels into
step parameters, entity attributes, the model-call log and from there into exports. These pure functions
replace the userinfo and the values of credential-like query parameters with ``REDACTED``; the request
itself is still sent to the real URL, only what is recorded about it is redacted.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

REDACTED = "REDACTED"

# Query parameter names (compared case-insensitively, '-' read as '_') whose values are credentials.
SECRET_PARAMETERS = frozenset(
    {
        "key", "api_key", "apikey", "token", "access_token", "auth", "auth_token", "sig", "signature", "secret",
        "client_secret", "password", "passwd", "pwd", "x_amz_signature", "x_amz_credential", "x_amz_security_token",
        "x_goog_signature", "x_goog_credential",
    }
)

# A URL inside free text: a scheme, '://', then everything up to whitespace, a quote or an angle bracket.
_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>`]+")


def redact_url(url: str) -> str:
    """``url`` with its userinfo and credential query values replaced by ``REDACTED``; otherwise byte-for-byte
    the same (other parameters keep their order and encoding)."""
    try:
        parts = urlsplit(url)
    except ValueError:  # e.g. an unbalanced '[' in the host: not a URL we can take apart, so hide all of it
        return REDACTED
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{REDACTED}@{netloc.rsplit('@', 1)[1]}"
    query = "&".join(_redact_pair(pair) for pair in parts.query.split("&")) if parts.query else parts.query
    if netloc == parts.netloc and query == parts.query:
        return url
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def _redact_pair(pair: str) -> str:
    name, equals, _ = pair.partition("=")
    if equals and unquote(name).strip().lower().replace("-", "_") in SECRET_PARAMETERS:
        return f"{name}={REDACTED}"
    return pair


def redact_text(text: str) -> str:
    """``text`` with every URL in it redacted (an endpoint like ``openai@https://…``, an error message)."""
    return _URL_IN_TEXT.sub(lambda match: redact_url(match.group(0)), text) if "://" in text else text


def redact_value(value: Any) -> Any:
    """``value`` (parameters, attributes: nested mappings, lists and scalars) with every string redacted."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, Mapping):
        return {key: redact_value(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_value(item) for item in value]
    return value
