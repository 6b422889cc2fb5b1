"""Settings of the counterfactual edits, filled from the config file (section ``counterfactual``)."""

from typing import Optional

from dagster import ConfigurableResource
from pydantic import Field

from assets.counterfactual.logic.edit_pairs import DEFAULT_LABELS
from resources.config_paths import ConfigPath


class CounterfactualSettings(ConfigurableResource):
    """Which edits to make: a CSV of specs (source_id = a pool item id, or a ContextCanvas case id with an optional
    ``#<image position>``; decisive_cue, instruction, original_label, intended_label; optionally edited_image, a file
    relative to the sheet holding an edit made elsewhere)."""

    specs: Optional[ConfigPath] = Field(default=None, description="CSV of edit specs; None: no edits")
    checks: Optional[ConfigPath] = Field(default=None, description="CSV of manual-check decisions (record_id, decision, reviewer, note)")
    labels: list[str] = Field(default_factory=lambda: list(DEFAULT_LABELS), description="Allowed labels")
    seed: Optional[int] = Field(default=None, description="Sent to models that take one")


CONFIG_SECTIONS = {"counterfactual": ("counterfactual", CounterfactualSettings)}
"""Config section -> (Dagster resource key, the class whose fields are the section's keys)."""
