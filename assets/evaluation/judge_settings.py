"""Settings of the evaluations' model judges and of the human similarity study (``evaluation.judges``).

Why apart from settings.py: the judges are one concern (which role judges, which judgements run, the sheet that
checks the judge against people), read by assets/evaluation/judging.py alone.
"""

import os
from typing import ClassVar, Optional

from dagster import Config, Failure
from pydantic import Field

from assets.core.logic.keyed_hash import KeyedHash
from resources.config_paths import ConfigPath


class RaterSalt(Config):
    """A sheet people fill in: their names are stored only as keyed hashes, under a salt from the environment."""

    salt_label: ClassVar[str] = "rater salt"

    rater_salt_env: str = Field(default="AESFORGE_RATER_SALT", description="Environment variable holding the secret salt"
                                " that turns rater names into keyed hashes (preferred over rater_salt)")
    rater_salt: Optional[str] = Field(default=None, description="The salt given in the config file instead (demo only;"
                                      " never stored in the warehouse)")

    def rater_hasher(self) -> KeyedHash:
        """Rater names are stored only as keyed hashes: no salt, no ratings read."""
        salt = os.environ.get(self.rater_salt_env) or self.rater_salt
        if not salt:
            raise Failure(description=f"no {self.salt_label}: set the environment variable {self.rater_salt_env} (or"
                          " the sheet's rater_salt setting); rater names are only ever stored as keyed hashes")
        label = self.salt_label.replace(" ", "-")
        return KeyedHash(salt, what=self.salt_label, fingerprint_label=f"aesforge/{label}/fingerprint/v1".encode())


class SimilaritySheetSettings(RaterSalt):
    """The human check of the similarity judge (r/photocritique §4, Table 5): a blank sheet of sampled model–human
    critique pairs for people to rate 1–5, and the sheets they return."""

    salt_label: ClassVar[str] = "similarity rater salt"

    sheet_dir: Optional[ConfigPath] = Field(default=None, description="Folder the blank sheet is written to"
                                            " (<benchmark>_similarity_sheet.csv); unset: no sheet is written")
    pairs: int = Field(default=40, gt=0, description="Model–human critique pairs on the sheet, sampled with `seed`"
                       " over the benchmark's model runs")
    seed: int = Field(default=0, description="Seed of the pair sample (the same seed and runs give the same sheet)")
    returned: list[ConfigPath] = Field(default_factory=list, description="Filled sheets to read (CSV, the blank sheet's"
                                       " columns with `rating` 1–5 and `rater` filled in)")
    rater_salt_env: str = Field(default="AESFORGE_SIMILARITY_SALT", description="Environment variable holding the"
                                " secret salt that turns rater names into keyed hashes (preferred over rater_salt)")


class JudgeSettings(Config):
    """Which model judges the predictions and which judgements it makes."""

    role: str = Field(default="judge", description="The models section's role (or named configuration) asked as the"
                      " judge; the heuristic provider judges offline, from the texts")
    pairwise: bool = Field(default=True, description="photocritique: which of the model critique and the top-ranked"
                           " human critique is more useful, asked in both orders (judge_preference)")
    similarity: bool = Field(default=True, description="photocritique: 1–5 substantive similarity of the model critique"
                             " and the top-ranked human critique (judge_similarity)")
    quality: bool = Field(default=True, description="critique_canvas: 1–5 critique quality per criterion, from the image,"
                          " the instruction and the response (judge_quality and judge_<criterion>)")
    max_concurrency: int = Field(default=4, gt=0, description="Judge requests in flight")
    similarity_sheet: SimilaritySheetSettings = Field(default_factory=SimilaritySheetSettings,
                                                      description="The human similarity sheet and its returned copies")
