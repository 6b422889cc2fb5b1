"""Keyed hashes of identifiers people are known by (Reddit usernames, survey rater ids): they can be compared and
grouped, never read back. The key (a secret salt from the configuration or the environment) stays inside the object:
not in its repr, not in a pickle, not in the warehouse; ``salt_fingerprint`` is safe to store and tells a later run
that the salt changed, which would give everyone a new hash.
"""

from __future__ import annotations

import hashlib
import hmac


class KeyedHash:
    """HMAC-SHA256 under one secret salt, cut to 32 hex digits."""

    __slots__ = ("_key", "_label")

    def __init__(self, salt: str, *, what: str, fingerprint_label: bytes) -> None:
        if not salt:
            raise ValueError(f"the {what} is empty; configure one (it is never stored)")
        self._key = salt.encode("utf-8")
        self._label = fingerprint_label

    def __repr__(self) -> str:
        return f"{type(self).__name__}(salt=<hidden>)"

    def __reduce__(self):
        raise TypeError(f"{type(self).__name__} holds a secret and is not picklable")

    def digest(self, text: str) -> str:
        return hmac.new(self._key, text.encode("utf-8"), hashlib.sha256).hexdigest()[:32]

    def salt_fingerprint(self) -> str:
        """Keyed hash of a fixed label: differs whenever the salt differs, reveals nothing of it."""
        return self.digest(self._label.decode("ascii"))
