"""Versioned prompt templates of the evaluation protocols (read with assets.core.templates.PromptFolder)."""
