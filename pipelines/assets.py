"""Every asset and check of the code location, in data-flow order."""

from assets.clip_dedup import clip_duplicates
from assets.collection import fetched_files, source_records
from assets.context_case_records import context_cases
from assets.context_case_review import context_case_review
from assets.context_export import context_canvas_export
from assets.context_shortcut_report import context_shortcut_report
from assets.counterfactual_edits import counterfactual_edits
from assets.critique_audit import critique_audit_report, critique_audit_sample
from assets.critique_canvas import critique_pairs
from assets.critique_export import critique_canvas_export
from assets.critique_splits import critique_splits
from assets.design_export import aeseval_export
from assets.design_ingest import design_records
from assets.design_perturbation import perturbed_designs
from assets.design_questions import design_questions, design_splits
from assets.design_reasoning import design_reasoning_paths
from assets.design_rendering import design_renders
from assets.design_review import design_labels, design_review_sheet
from assets.filtering import pool_candidates
from assets.normalization import normalized_images
from assets.perceptual_dedup import perceptual_duplicates
from assets.photocritique import photocritique_export, photocritique_references
from assets.poetry_corpus import poem_corpus
from assets.poetry_illustrations import poem_illustrations
from assets.poetry_judge import poem_judge_scores
from assets.poetry_scores import poem_benchmark_statistics, poem_scores, poetry_benchmark_export
from assets.poetry_survey import poem_survey_responses, recognizability_items
from assets.poetry_text_integrity import poem_text_integrity
from assets.pool import image_pool
from assets.reddit_ingest import reddit_comments, reddit_posts
from assets.reddit_post_images import reddit_post_images
from quality.context_checks import context_cases_contract, context_export_contract, context_review_contract
from quality.critique_checks import critique_pairs_contract, critique_splits_contract
from quality.design_checks import design_questions_contract, perturbation_log_contract
from quality.image_pool_checks import image_pool_contract, source_records_contract
from quality.photocritique_checks import photocritique_references_contract
from quality.poetry_checks import poem_scores_contract, recognizability_items_contract

IMAGE_POOL_ASSETS = [
    source_records,
    fetched_files,
    normalized_images,
    pool_candidates,
    perceptual_duplicates,
    clip_duplicates,
    image_pool,
]
PHOTOCRITIQUE_ASSETS = [
    reddit_posts,
    reddit_comments,
    reddit_post_images,
    photocritique_references,
    photocritique_export,
]
CRITIQUE_CANVAS_ASSETS = [critique_pairs, critique_splits, critique_audit_sample, critique_audit_report, critique_canvas_export]
DESIGN_ASSETS = [design_records, perturbed_designs, design_renders, design_review_sheet, design_labels, design_splits,
                 design_questions, design_reasoning_paths, aeseval_export]
POETRY_ASSETS = [poem_corpus, poem_illustrations, recognizability_items, poem_survey_responses, poem_text_integrity, poem_scores,
                 poem_benchmark_statistics, poem_judge_scores, poetry_benchmark_export]
CONTEXT_ASSETS = [context_cases, context_case_review, context_shortcut_report, context_canvas_export]
ALL_ASSETS = [*IMAGE_POOL_ASSETS, *PHOTOCRITIQUE_ASSETS, *CRITIQUE_CANVAS_ASSETS, *DESIGN_ASSETS, counterfactual_edits, *POETRY_ASSETS,
              *CONTEXT_ASSETS]
ALL_CHECKS = [source_records_contract, image_pool_contract, photocritique_references_contract, critique_pairs_contract,
              critique_splits_contract, perturbation_log_contract, design_questions_contract, recognizability_items_contract,
              poem_scores_contract, context_cases_contract, context_review_contract, context_export_contract]
