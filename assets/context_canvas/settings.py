"""Configuration of the contextual-suitability cases (ContextCanvas-style), section ``context_canvas`` of the config file."""

from dagster import ConfigurableResource
from pydantic import Field

from resources.config_paths import ConfigPath, OutputPath, ReturnedDir


class ContextSettings(ConfigurableResource):
    """Where expert-authored cases and their review sheets live, and how the shortcut probe is asked."""

    cases: list[ConfigPath] = Field(default_factory=list, description="Case files (JSON or CSV); image paths are relative to each file")
    sheet_dir: OutputPath = Field(default="data/review/context", description="Where the blank review sheet is written")
    returned_dir: ReturnedDir = Field(default="data/review/context/returned", description="Where filled review sheets (*.csv) are read")
    min_reviewers: int = Field(default=2, description="Reviewers a case needs before it can be retained without a final row")
    text_only_role: str = Field(default="annotator", description="Provider-layer role that answers cases without their images")
    contact_sheet_height: int = Field(default=512, description="Panel height of the side-by-side sheet of multi-image cases")
    export_dir: OutputPath = Field(default="data/exports/context_canvas", description="Where evaluation and gold files are written")


CONFIG_SECTIONS = {"context_canvas": ("context_canvas", ContextSettings)}
"""Config section -> (Dagster resource key, the class whose fields are the section's keys)."""
