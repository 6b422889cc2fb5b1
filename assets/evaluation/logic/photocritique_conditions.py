"""The r/photocritique prompt conditions: which template each uses, how many passes, what length it asks, and the
decoding every model shares.

Eight conditions vary persona framing, an aspect hint, a length instruction and single- versus multi-pass
generation. Capped-Plain is primary: it keeps length in a human-plausible range (50–150 words) while leaving the
choice of what to discuss to the model; its two length-matched variants (30–60, 20–45) bracket the human mean of
54 words. Every range is an instruction in the prompt, never a truncation.

Decoding is the same for all models and conditions (temperature 0.5, top-p 0.9, seed 42), so differences come from
the prompt and the model, not the sampler; only the token budget changes with the condition. Budgets are about
twice what the requested words need at ~1.35 tokens a word, so the instruction, not the budget, normally decides
the length (a budget that cuts an answer shows as a truncated finish, and is a compliance finding in itself):

    capped 50–150 words: 150 × 1.35 ≈ 200 tokens → 400;  30–60: 60 × 1.35 ≈ 80 → 160;
    20–45: 45 × 1.35 ≈ 60 → 128;
    no length asked, one critique: 1024 (unconstrained models wrote ~400 words ≈ 540 tokens);
    three critiques in one JSON answer: 1536 (3 × ~400 tokens plus the JSON around them).

Every condition yields three critiques per post: a multi-pass condition in one call, a single-pass one in three
calls of the same prompt. Three calls with one fixed seed would return one critique three times on a
deterministic server, so ``sample_seeds`` gives the single-pass calls seeds 42, 43 and 44 (a server that can draw
n = 3 samples from one request under seed 42 may do that instead; either way the seeds are recorded).
"""

from __future__ import annotations

from dataclasses import dataclass

CRITIQUES_PER_POST = 3
SINGLE = "single"
MULTI = "multi"


@dataclass(frozen=True)
class Decoding:
    temperature: float = 0.5
    top_p: float = 0.9
    seed: int = 42


DECODING = Decoding()


@dataclass(frozen=True)
class Condition:
    name: str
    template: str                      # file name (without .txt) in assets/evaluation/prompts
    passes: str                        # "single": one critique per call; "multi": all three in one call
    word_range: tuple[int, int] | None  # the length the prompt asks for, per critique; None: none asked
    persona: bool                      # the prompt casts the model as an experienced photo critic
    aspect_hint: bool                  # the prompt lists aspects a critique may address
    max_new_tokens: int                # the per-call token budget (see the module docstring)

    @property
    def template_id(self) -> str:
        return f"evaluation/{self.template}"

    @property
    def calls_per_post(self) -> int:
        return CRITIQUES_PER_POST if self.passes == SINGLE else 1


def _condition(name: str, passes: str, word_range: tuple[int, int] | None, persona: bool, aspect_hint: bool,
               max_new_tokens: int) -> Condition:
    return Condition(name, f"photocritique_{name}_v1", passes, word_range, persona, aspect_hint, max_new_tokens)


CONDITIONS: tuple[Condition, ...] = (
    _condition("open_hinted", SINGLE, None, persona=True, aspect_hint=True, max_new_tokens=1024),
    _condition("capped_hinted", SINGLE, (50, 150), persona=True, aspect_hint=True, max_new_tokens=400),
    _condition("capped_plain", SINGLE, (50, 150), persona=True, aspect_hint=False, max_new_tokens=400),
    _condition("capped_plain_30_60", SINGLE, (30, 60), persona=True, aspect_hint=False, max_new_tokens=160),
    _condition("capped_plain_20_45", SINGLE, (20, 45), persona=True, aspect_hint=False, max_new_tokens=128),
    _condition("multi_hinted", MULTI, None, persona=True, aspect_hint=True, max_new_tokens=1536),
    _condition("multi_plain", MULTI, None, persona=False, aspect_hint=False, max_new_tokens=1536),
    _condition("unguided", SINGLE, None, persona=False, aspect_hint=False, max_new_tokens=1024),
)
PRIMARY = "capped_plain"
LENGTH_MATCHED = ("capped_plain_30_60", "capped_plain_20_45")

_BY_NAME = {c.name: c for c in CONDITIONS}


def condition(name: str) -> Condition:
    if name not in _BY_NAME:
        raise KeyError(f"no photocritique condition {name!r}; known: {', '.join(_BY_NAME)}")
    return _BY_NAME[name]


def sample_seeds(cond: Condition, decoding: Decoding = DECODING) -> tuple[int, ...]:
    """The seed of each call that makes a post's three critiques: one call at the base seed for a multi-pass
    condition, consecutive seeds from it for a single-pass one (so the three samples can differ)."""
    return tuple(decoding.seed + i for i in range(cond.calls_per_post))
