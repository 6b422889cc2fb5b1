"""Every asset and check of the code location, in data-flow order."""

from assets.clip_dedup import clip_duplicates
from assets.collection import fetched_files, source_records
from assets.filtering import pool_candidates
from assets.normalization import normalized_images
from assets.perceptual_dedup import perceptual_duplicates
from assets.pool import image_pool
from quality.image_pool_checks import image_pool_contract, source_records_contract

IMAGE_POOL_ASSETS = [
    source_records,
    fetched_files,
    normalized_images,
    pool_candidates,
    perceptual_duplicates,
    clip_duplicates,
    image_pool,
]
IMAGE_POOL_CHECKS = [source_records_contract, image_pool_contract]
