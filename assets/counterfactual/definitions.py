"""Counterfactual edits of pool images: the asset (found in the package's modules); built by the full rebuild."""

import assets.counterfactual as package
from assets.core.pipeline_package import package_definitions

GROUP = "counterfactual"

defs = package_definitions(package, GROUP, kinds=("openai", "gemini"))
