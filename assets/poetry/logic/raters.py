"""Pseudonyms of survey raters: a keyed hash of the id the survey platform exported, so a rater's answers can be
grouped and published without the id (often a name, an e-mail or a platform username) ever being stored.
"""

from __future__ import annotations

from assets.core.logic.keyed_hash import KeyedHash

PSEUDONYM_PREFIX = "rater-"


class RaterPseudonyms(KeyedHash):
    """HMAC-SHA256 pseudonyms of rater ids under one secret salt."""

    __slots__ = ()

    def __init__(self, salt: str) -> None:
        super().__init__(salt, what="survey rater salt", fingerprint_label=b"aesforge/survey-rater-salt/fingerprint/v1")

    def of(self, rater_id: str) -> str:
        """``rater-`` and 32 hex digits; the same id under the same salt always gives the same pseudonym."""
        if not rater_id:
            raise ValueError("a rater id is empty")
        return PSEUDONYM_PREFIX + self.digest(rater_id)
