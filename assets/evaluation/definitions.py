"""Evaluation: per benchmark an asset that scores its release, and a job that runs it."""

from dagster import define_asset_job

import assets.evaluation as package
from assets.core.pipeline_package import package_definitions
from assets.evaluation.benchmark_scores import (aeseval_evaluation, context_canvas_evaluation, counterfactual_evaluation,
                                                critique_canvas_evaluation, photocritique_evaluation,
                                                poem_benchmark_evaluation)

GROUP = "evaluation"

defs = package_definitions(
    package, GROUP, kinds=("openai", "gemini"),
    jobs=[define_asset_job(f"{a.key.to_user_string()}_job", selection=[a]) for a in (
        photocritique_evaluation, critique_canvas_evaluation, context_canvas_evaluation, counterfactual_evaluation,
        aeseval_evaluation, poem_benchmark_evaluation)],
)
