"""The verdict of a model-based pool filter on one record, from its image's score (pure: no model, no warehouse).

A filter is a score head over the image's CLIP embedding (an aesthetic predictor, a content-safety classifier) and a
band of acceptable scores: below ``reject_below`` or above ``reject_above`` is rejected under the filter's own reason
code, with the score and the bound in the detail. An image with no embedding to score is kept unless the filter says
unscored images are rejected (a safety filter should fail closed; an aesthetic one need not).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

NOT_SCORED = "not_scored"
INVALID_SCORE = "invalid_model_score"


@dataclass(frozen=True)
class ScoreBand:
    name: str
    reason: str
    reject_below: float | None = None
    reject_above: float | None = None
    reject_unscored: bool = False


def score_verdict(score: float | None, band: ScoreBand) -> tuple[str, str] | None:
    """None when the record passes; otherwise (reason code, detail)."""
    if score is None:
        if band.reject_unscored:
            return NOT_SCORED, f"{band.name}: the image has no embedding to score, and unscored images are rejected"
        return None
    if not math.isfinite(score):
        return INVALID_SCORE, f"{band.name} score is {score}"
    if band.reject_below is not None and score < band.reject_below:
        return band.reason, f"{band.name} score {score:.4f} below {band.reject_below:g}"
    if band.reject_above is not None and score > band.reject_above:
        return band.reason, f"{band.name} score {score:.4f} above {band.reject_above:g}"
    return None
