"""Which of seven aesthetic aspects a critique mentions, by keyword, applied alike to model and human critiques.

Per aspect a hand-written list of regular expressions (our own vocabulary of English photo critique); an aspect is
covered when any of its patterns matches. Matching ignores case, and every pattern is wrapped in word boundaries
(``\\b(?:pattern)\\b``), so "iso" does not fire inside "isolated", "light" not inside "Lightroom", "cast" not
inside "overcast", and "colorless" counts for colour only because the list names it. Curly apostrophes and
dashes are read as straight ones first.

A keyword tagger records mention, not depth, and its errors go both ways. A word in a non-photographic sense
still counts ("subject to", "in light of", "a frame of mind"): accepted on purpose, as the lists stay readable and
the error is the same for every critic (bare "shot" is not listed, only "shot at/with/on" a setting). A
paraphrase that names no listed term is missed. The lists are versioned: ``TAGGER_VERSION`` is bumped by hand on
any edit, and ``TERMS_DIGEST`` (sha256 of the lists and the wrapping rule) changes by itself, so every coverage
figure can say which lists made it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from warehouse.ids import digest_of

TAGGER_VERSION = "1"
ASPECTS = ("composition", "lighting", "color", "exposure", "technique", "mood", "subject")
_WRAP = r"\b(?:{})\b"

TERMS: dict[str, tuple[str, ...]] = {
    "composition": (
        r"compos(?:e|ed|es|ing|ition|itions|itional|itionally)",
        r"fram(?:e|ed|es|ing)",
        r"crop(?:s|ped|ping)?",
        r"(?:rule of )?thirds",
        r"lead(?:ing)? lines?",
        r"symmetr(?:y|ic|ical|ically)|asymmetr(?:y|ic|ical)",
        r"(?<!white )(?<!color )(?<!colour )balanc(?:e|ed|es|ing)",
        r"negative space",
        r"fore-?ground|back-?ground|mid-?ground|middle ground",
        r"placement|placed|positioning",
        r"cent(?:er|re)(?:d|ing)?|off-cent(?:er|re)",
        r"horizons?|horizon line",
        r"perspectives?",
        r"(?:camera |shooting |low |high |eye-level )?angles?",
        r"layout|arrangement|arranged",
        r"diagonals?",
        r"visual (?:weight|flow)",
        r"(?:draws?|drawn|drawing|leads?|led|guides?|pulls?) (?:the |your |my |the viewer's )?eyes?"
        r"|eyes? (?:is |are |gets? |goes )?(?:drawn|led|pulled|guided)",
        r"tilt(?:ed|s)?|crooked|straighten(?:ed|ing)?|level(?:led)? (?:the )?horizon",
        r"head-?room|breathing room",
        r"cut(?:ting|s)? off",
        r"clutter(?:ed)?|busy background",
        r"minimalis[mt]",
    ),
    "lighting": (
        r"light(?:s|ing|ed)?",
        r"lit|(?:back|side|rim|top|front|under)-?lit",
        r"(?:back|side|rim|top|front|key|fill)[- ]?light(?:s|ing)?",
        r"shadows?|shadowed|shade",
        r"golden hour|blue hour|magic hour",
        r"sun(?:light|lit|set|sets|rise|rises|shine|ny)?",
        r"flash(?:es)?|strobes?|speedlights?|off-camera",
        r"illuminat(?:e|ed|es|ing|ion)",
        r"glow(?:s|ing)?",
        r"overcast|daylight|twilight|dusk|dawn",
        r"silhouett(?:e|es|ed)",
        r"directional",
        r"chiaroscuro",
        r"catch-?lights?",
        r"spot-?lights?|dappled",
        r"low[- ]key|high[- ]key",
        r"lamps?|street-?lights?|neon",
        r"reflector|diffus(?:e|ed|er|ion)|softbox",
    ),
    "color": (
        r"colou?r(?:s|ed|ful|fully|ing|less|ation|ize|ise|ized|ised|ist)?",
        r"(?:de|over|under|over-|under-)?saturat(?:e|ed|es|ing|ion)",
        r"vibran(?:t|ce|cy)",
        r"hues?",
        r"tint(?:s|ed)?",
        r"white balance|wb",
        r"(?:colou?r|green|magenta|blue|yellow|orange|red|warm|cool) casts?",
        r"warmth|(?:warm|cool|cold)(?:er)? (?:tones?|tint|hues?|palette|feel|look|light)",
        r"palettes?",
        r"monochrom(?:e|atic)|black and white|black-and-white|b&w|b/w|gr[ae]yscale",
        r"sepia",
        r"skin[- ]tones?|split[- ]ton(?:e|ed|ing)",
        r"colou?r[- ]grad(?:e|ed|ing)|grad(?:e|ed|ing) the colou?rs?",
        r"reds?|greens?|blues?|yellows?|oranges?|purples?|pinks?|magenta|cyan|teal|turquoise",
        r"pastels?|muted",
        r"vivid(?:ly|ness)?",
        r"temperature",
        r"hsl",
    ),
    "exposure": (
        r"(?:over|under|re)?-?expos(?:e|ed|es|ing|ure|ures)",
        r"blown(?: out)?|blow(?:s|ing)? out",
        r"clip(?:s|ped|ping)",
        r"highlights?",
        r"(?:crushed|blocked|deep|dark|lift(?:ed|ing)? the|open(?:ing)? up the) shadows|shadow detail",
        r"crushed blacks|crush(?:es|ing)? the blacks",
        r"(?:too|a bit|a little|slightly|very|quite|overly|rather) (?:dark|bright)",
        r"bright(?:en|ened|ening|er|ness)|dark(?:en|ened|ening|er)",
        r"histograms?",
        r"dynamic range",
        r"contrast(?:s|y|ing)?",
        r"(?:half|one|two|a|1|2) stops?",
        r"ev",
        r"hdr",
        r"luminance|luminosity",
        r"tonal(?:ity| range)?",
        r"black point|white point",
        r"muddy|murky|washed[- ]out",
        r"bracket(?:s|ed|ing)?",
        r"meter(?:ed|ing)|light meter|spot[- ]meter(?:ing)?",
    ),
    "technique": (
        r"focus(?:ed|es|ing|sed|sing)?|refocus|misfocus(?:ed)?",
        r"sharp(?:ly|ness|en|ened|ening|er)?",
        r"blur(?:s|ry|red|ring)?",
        r"depth of field|dof|bokeh|shallow focus",
        r"apertures?|f ?/ ?\d+(?:\.\d+)?|f\d+(?:\.\d+)?|f-?stops?",
        r"shutter(?: speed)?|1/\d{2,4}(?: ?s| ?sec)?",
        r"iso",
        r"nois(?:e|y)|grain(?:s|y)?",
        r"tripod|handheld|hand-held|stabili[sz](?:e|ed|ation|er)",
        r"lens(?:es)?|focal length|\d{1,3} ?mm",
        r"wide[- ]angle|telephoto|zoom(?:s|ed|ing)?|macro",
        r"long exposures?|panning|motion blur",
        r"post[- ]?process(?:ing|ed)?|edit(?:s|ed|ing)?|retouch(?:ed|ing)?",
        r"lightroom|photoshop|capture one|presets?",
        r"vignett(?:e|es|ed|ing)",
        r"chromatic aberration|fringing|distortion",
        r"dust spots?|sensor dust",
        r"resolution|pixelated|compression|artifacts?|artefacts?",
        r"camera settings?|manual mode",
        r"technical(?:ly)?|technique",
        r"shot (?:at|with|on) (?:f|iso|a|an|\d)",
    ),
    "mood": (
        r"mood(?:s|y|iness)?",
        r"atmospher(?:e|es|ic)",
        r"emotion(?:s|al|ally)?|emotive",
        r"evoke(?:s|d)?|evoking|evocative",
        r"feeling of|(?:overall )?feel of|sense of (?:calm|peace|place|isolation|loneliness|nostalgia|mystery"
        r"|wonder|tension|serenity|drama|joy)",
        r"seren(?:e|ity)|calm(?:ing|ness)?|peaceful|tranquil(?:ity)?",
        r"drama(?:tic|tically)?",
        r"melanchol(?:y|ic)|somb(?:er|re)|gloom(?:y)?|sad(?:ness)?",
        r"eerie|haunting|ominous|mysterious|mystery|creepy",
        r"nostalgi(?:a|c)",
        r"whimsical|playful|joy(?:ful|ous)?|cheerful",
        r"dream(?:y|like)|ethereal",
        r"cozy|cosy|intima(?:te|cy)",
        r"lonel(?:y|iness)|solitude",
        r"tension|tense",
        r"vibes?",
        r"cinematic|gritty",
        r"energy|energetic",
    ),
    "subject": (
        r"subjects?|subject matter",
        r"focal point|points? of interest|cent(?:er|re) of interest",
        r"portraits?|portraiture|headshots?",
        r"(?:facial )?expressions?|gaze|pos(?:e|es|ed|ing)",
        r"faces?|people|person",
        r"landscapes?|cityscapes?|seascapes?|skyline",
        r"wildlife|animals?|birds?|pets?|dogs?|cats?",
        r"architecture|architectural|buildings?",
        r"stor(?:y|ies)|storytelling|narrative",
        r"decisive moment|captur(?:e|ed|es|ing) (?:the|a|this|that) moment",
        r"candid|documentary|street (?:photo|photos|photography|shot|shots|scene)",
        r"human element",
        r"(?:main|central|primary) (?:focus|element|interest)",
        r"what (?:the|this) (?:photo|image|picture|shot) is about",
        r"food|products?|still life",
        r"(?:the|a) (?:man|woman|child|kid|girl|boy|couple|family)",
        r"model(?:'s)? (?:pose|face|expression)",
    ),
}

TERMS_DIGEST = digest_of({"version": TAGGER_VERSION, "wrap": _WRAP, "flags": "IGNORECASE", "terms": TERMS})

# Read typographic punctuation as ASCII first, so "colour’s" and "well–lit" meet the same patterns.
_TYPOGRAPHIC = str.maketrans({"’": "'", "‘": "'", "–": "-", "—": "-", "‐": "-", "‑": "-"})


@dataclass(frozen=True)
class Coverage:
    n: int                          # critiques (or posts, for post_averaged_coverage) the rates are over
    rates: dict[str, float | None]  # per aspect, share covered; None when n is 0
    tagger_version: str = TAGGER_VERSION
    terms_digest: str = TERMS_DIGEST


def terms() -> dict[str, tuple[str, ...]]:
    """The tagger's patterns per aspect, as written (unwrapped), for a report to print."""
    return dict(TERMS)


@lru_cache(maxsize=None)
def _compiled(aspect: str) -> re.Pattern[str]:
    return re.compile("|".join(_WRAP.format(p) for p in TERMS[aspect]), re.IGNORECASE)


def _normalized(text: str) -> str:
    return text.translate(_TYPOGRAPHIC)


def aspects_of(critique: str) -> frozenset[str]:
    """The aspects the critique mentions."""
    text = _normalized(critique)
    return frozenset(a for a in ASPECTS if _compiled(a).search(text))


def matched_terms(critique: str) -> dict[str, tuple[str, ...]]:
    """Per covered aspect, the words of the critique that made it covered (in order, lower-cased): to audit a tag."""
    text = _normalized(critique)
    found = {a: tuple(m.group(0).casefold() for m in _compiled(a).finditer(text)) for a in ASPECTS}
    return {a: words for a, words in found.items() if words}


def coverage(critiques: Iterable[str]) -> Coverage:
    """Per aspect, the share of the critiques that mention it."""
    counts = dict.fromkeys(ASPECTS, 0)
    n = 0
    for critique in critiques:
        n += 1
        for aspect in aspects_of(critique):
            counts[aspect] += 1
    return Coverage(n, {a: (counts[a] / n if n else None) for a in ASPECTS})


def post_averaged_coverage(posts: Iterable[Sequence[str]]) -> Coverage:
    """Per aspect, the share of a post's critiques that mention it, averaged over posts (each post weighs the
    same even where one has fewer parsed critiques); posts without critiques are skipped."""
    sums = dict.fromkeys(ASPECTS, 0.0)
    n = 0
    for critiques in posts:
        if not critiques:
            continue
        per_post = coverage(critiques)
        n += 1
        for aspect in ASPECTS:
            sums[aspect] += per_post.rates[aspect]
    return Coverage(n, {a: (sums[a] / n if n else None) for a in ASPECTS})
