"""The poem benchmark's heavy steps at the paper's scale and beyond, in one process.

    python bench/poetry.py --poems 320 --models 4 --ratings 1527 --ocr-images 20

Times, on generated inputs: choosing three distractors per poem (inverted-index TF-IDF over character n-grams)
for ``--poems`` poems and for 100x as many; scoring ``--ratings`` survey responses and computing within-one
agreement; the 10,000-resample paired bootstrap of the ranking of ``--models`` models over the poems; and offline
OCR per image (rapidocr, bundled models) on ``--ocr-images`` 1024x1024 painting-like images. A benchmark, not a
test: figures go in bench/README.md.
"""

import argparse
import io
import random
import sys
import time
from pathlib import Path

import numpy as np
from PIL import Image, ImageFilter

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from assets.poetry.logic.distractors import distractors  # noqa: E402
from assets.poetry.logic.rubric import DIMENSIONS  # noqa: E402
from assets.poetry.logic.stats import bootstrap_ranks, image_scores, within_one_agreement  # noqa: E402
from assets.poetry.logic.survey_rows import SurveyResponse  # noqa: E402
from assets.poetry.logic.poems import Poem  # noqa: E402
from resources.ocr import RapidOcrEngine  # noqa: E402

CJK = [chr(c) for c in range(0x4E00, 0x4E00 + 3000)]


def poems(n: int, rng: random.Random) -> list[Poem]:
    out = []
    for i in range(n):
        lines = ["".join(rng.choice(CJK) for _ in range(7)) for _ in range(4)]
        out.append(Poem(poem_id=f"p{i:07d}", title=f"poem {i}", author="anon", text="\n".join(lines), translation=None,
                        themes=(), form=None, source=None, locator=f"bench#record={i}"))
    return out


def responses(n: int, items: list[str], rng: random.Random) -> list[SurveyResponse]:
    out = []
    for i in range(n):
        answers = {d.key: rng.choice(d.options).letter for d in DIMENSIONS}
        out.append(SurveyResponse(i + 2, f"a{i % 191}", items[i % len(items)], "A", rng.random() < 0.8, answers, 60.0, None))
    return out


def painting(seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    base = np.linspace(0, 1, 1024)[None, :, None] * rng.uniform(60, 200, 3) + rng.normal(0, 12, (1024, 1024, 3))
    image = Image.fromarray(np.clip(base + 30, 0, 255).astype("uint8")).filter(ImageFilter.GaussianBlur(2))
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return buffer.getvalue()


def timed(label: str, fn):
    start = time.perf_counter()
    result = fn()
    print(f"{label}: {time.perf_counter() - start:.3f} s")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--poems", type=int, default=320)
    parser.add_argument("--models", type=int, default=4)
    parser.add_argument("--ratings", type=int, default=1527)
    parser.add_argument("--ocr-images", type=int, default=20)
    args = parser.parse_args()
    rng = random.Random(0)
    corpus = poems(args.poems, rng)
    timed(f"distractors for {args.poems} poems", lambda: distractors(corpus, k=3))
    big = poems(args.poems * 100, rng)
    timed(f"distractors for {len(big)} poems", lambda: distractors(big, k=3))
    items = [f"{p.poem_id}@m{m}" for p in corpus for m in range(args.models)]
    survey = responses(args.ratings, items, rng)
    scores = timed(f"scores for {args.ratings} responses over {len(items)} images", lambda: image_scores(survey))
    timed("within-one agreement", lambda: within_one_agreement(survey))
    quality = {f"m{m}": {p.poem_id: rng.random() * 0.3 + 0.1 * m for p in corpus} for m in range(args.models)}
    ranks = timed(f"bootstrap, 10,000 resamples, {args.models} models x {args.poems} poems",
                  lambda: bootstrap_ranks(quality, 10_000, 0))
    print(f"  best model first in {ranks.frequencies[ranks.observed_ranking[0]][1]:.4f} of resamples; {len(scores)} images scored")
    engine = RapidOcrEngine()
    images = [painting(i) for i in range(args.ocr_images)]
    engine.read(images[0])  # load the models once
    start = time.perf_counter()
    for image in images:
        engine.read(image)
    per = (time.perf_counter() - start) / len(images)
    print(f"OCR: {per:.3f} s per 1024x1024 image ({1 / per:.2f} images/s; 10^6 images: {per * 1e6 / 3600:.0f} CPU-hours)")


if __name__ == "__main__":
    main()
