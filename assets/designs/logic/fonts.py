"""Design font names → installed font files, through one documented fallback chain.

Crello records name fonts the way a designer picks them ("Montserrat", "Roboto Bold", "Playfair Display");
the render machine has only the fonts its packages installed (here DejaVu; elsewhere perhaps Liberation,
Noto, WenQuanYi). The renderer needs a real file for every name, chosen the same way every time, and the
choice is provenance: a render typeset in DejaVu Serif instead of Playfair Display is a different image, so
:class:`FontChoice` records the file, the face, and which rule picked it.

The chain, first rule that gives an installed face wins (``how``):

1. ``exact``     the requested family is installed. Names are compared as compact lower-case keys (spaces,
                 dashes and case ignored: "Open Sans" = "OpenSans" = "open-sans"), against each face's own
                 family name (FreeType's ``getname``) and, for files whose internal name differs, the family
                 part of the file name ("Montserrat-Bold.ttf" → "montserrat").
2. ``alias``     a metric-compatible stand-in is installed (Arial/Helvetica → Liberation Sans, Times New
                 Roman → Liberation Serif, Courier New → Liberation Mono), so line breaks survive.
3. ``category``  the name's category (known families, then words in the name: "serif", "slab", "sans",
                 "mono", "script", CJK family names) picks the first installed family of its list:
                 serif → DejaVu Serif, Liberation Serif, Noto Serif; sans → DejaVu Sans, Liberation Sans,
                 Noto Sans; mono → DejaVu Sans Mono, Liberation Mono, Noto Sans Mono; display/script → the
                 sans list (no script face is assumed installed; a legible sans beats a random one); CJK →
                 Noto Sans CJK, WenQuanYi, Droid Sans Fallback, then the sans list. DejaVu comes first so
                 a category render is the same on every machine that has DejaVu, whatever else it has.
4. ``fallback``  DejaVu Sans (unknown names, empty names, a category with nothing installed); if even that
                 is missing, the first installed face by family and path.

Within the chosen family the face follows the style words in the request ("Bold", "Italic", "Light",
"Condensed", …): the closest weight, the right slant, the normal width, ties to the path. A fifth value,
``cjk``, comes from :meth:`FontResolver.resolve_for_text`: the text has CJK characters the chosen face lacks
and a CJK face is installed (else the face is kept and the missing characters are reported).

Scale: the folders are scanned once per process (module-level cache by folder list) and each name resolves
once per resolver (an LRU cache), so 10^6 designs cost a dictionary lookup per text element.
Fonts are opened with Pillow's BASIC layout engine: libraqm is present on some machines and not others, and
the same design must give the same pixels everywhere (no complex-script shaping, a documented limit).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

HOWS = ("exact", "alias", "category", "fallback", "cjk")
CATEGORIES = ("serif", "sans", "mono", "display", "cjk")
STANDARD_FONT_DIRS = ("/usr/share/fonts", "/usr/local/share/fonts", "~/.fonts", "~/.local/share/fonts")
FONT_DIR_ENV = "AESFORGE_FONT_DIRS"  # extra folders for default_resolver(), os.pathsep-separated
FONT_SUFFIXES = (".ttf", ".otf", ".ttc", ".otc")
LAST_RESORT = "DejaVu Sans"
MAX_COLLECTION_FACES = 16

CATEGORY_FAMILIES: dict[str, tuple[str, ...]] = {
    "serif": ("DejaVu Serif", "Liberation Serif", "Noto Serif"),
    "sans": ("DejaVu Sans", "Liberation Sans", "Noto Sans"),
    "mono": ("DejaVu Sans Mono", "Liberation Mono", "Noto Sans Mono"),
    "display": ("DejaVu Sans", "Liberation Sans", "Noto Sans"),
    "cjk": ("Noto Sans CJK SC", "Noto Sans CJK JP", "Noto Sans CJK TC", "Noto Sans CJK KR", "Noto Sans CJK HK",
            "Noto Sans CJK", "WenQuanYi Micro Hei", "WenQuanYi Zen Hei", "Droid Sans Fallback",
            "DejaVu Sans", "Liberation Sans", "Noto Sans"),
}
ALIASES: dict[str, str] = {
    "arial": "Liberation Sans", "helvetica": "Liberation Sans", "helveticaneue": "Liberation Sans",
    "timesnewroman": "Liberation Serif", "times": "Liberation Serif",
    "couriernew": "Liberation Mono", "courier": "Liberation Mono",
}

# Families designers use (Crello's menu is mostly Google Fonts), by compact key. Anything else is judged by
# the words in its name.
_KNOWN = {
    "serif": """playfairdisplay playfair merriweather lora ptserif librebaskerville baskerville garamond ebgaramond
        cormorant cormorantgaramond crimsontext crimsonpro bodonimoda bodoni didot timesnewroman times georgia
        abrilfatface aleo robotoslab arvo bitter zillaslab alegreya cinzel cinzeldecorative prata oldstandardtt
        spectral cardo domine vollkorn sourceserifpro sourceserif4 yesevaone dmseriftext dmserifdisplay cambria
        palatino bookantiqua frankruhllibre gelasio librecaslontext caslon trajanpro kameron rokkitt slabo27px
        josefinslab patuaone alfaslabone noticiatext ibmplexserif notoserif liberationserif dejavuserif
        sortsmillgoudy ovo marcellus forum rozhaone ultra cutive""",
    "sans": """montserrat roboto opensans lato raleway oswald poppins arial helvetica helveticaneue verdana tahoma
        nunito nunitosans ubuntu inter worksans futura gillsans rubik quicksand josefinsans firasans
        sourcesanspro sourcesans3 ptsans notosans mukta karla heebo barlow dmsans manrope cabin hind questrial
        muli exo exo2 titilliumweb archivo asap oxygen varelaround comfortaa dosis teko anton bebasneue bebas
        fjallaone leaguespartan spartan kanit prompt overpass librefranklin franklingothic avenir segoeui
        calibri trebuchetms centurygothic robotocondensed opensanscondensed ibmplexsans publicsans sora outfit
        lexend abel signika alata jost mulish redhatdisplay redhattext plusjakartasans liberationsans
        dejavusans yanonekaffeesatz pathwaygothicone sairacondensed archivonarrow""",
    "mono": """courier couriernew consolas inconsolata menlo monaco robotomono sourcecodepro firacode firamono
        spacemono ibmplexmono jetbrainsmono ubuntumono specialelite vt323 cutivemono liberationmono
        dejavusansmono""",
    "display": """pacifico lobster lobstertwo dancingscript greatvibes amaticsc caveat satisfy sacramento
        shadowsintolight indieflower permanentmarker kaushanscript courgette cookie allura alexbrush parisienne
        yellowtail tangerine handlee patrickhand gloriahallelujah architectsdaughter bangers fredokaone
        righteous luckiestguy monoton bungee pressstart2p chewy sniglet baloo baloo2 playball greatvibes
        marckscript rocksalt homemadeapple reeniebeanie bebaskai""",
}
KNOWN_FAMILIES: dict[str, str] = {key: category for category, words in _KNOWN.items() for key in words.split()}
_CJK_PREFIXES = ("sourcehan", "wenquanyi", "wqy", "simsun", "simhei", "microsoftyahei", "yahei", "pingfang",
                 "hiragino", "meiryo", "msgothic", "msmincho", "malgun", "nanum", "yugothic", "droidsansfallback",
                 "notosanssc", "notosanstc", "notosansjp", "notosanskr", "notosanshk", "notoserifsc",
                 "notoseriftc", "notoserifjp", "notoserifkr", "zcool", "mashanzheng", "longcang", "zhimangxing",
                 "liujianmaocao", "kaiti", "fangsong", "songti", "heiti", "mingliu")
_DISPLAY_WORDS = {"script", "hand", "handwriting", "handwritten", "brush", "display", "marker", "calligraphy",
                  "decorative", "signature", "comic"}

# Style words: weight (CSS numbers), slant, width. "Roman" is deliberately absent ("Times New Roman").
_WEIGHTS = {"thin": 100, "hairline": 100, "extralight": 200, "ultralight": 200, "light": 300, "regular": 400,
            "normal": 400, "book": 400, "medium": 500, "semibold": 600, "demibold": 600, "demi": 600, "bold": 700,
            "extrabold": 800, "ultrabold": 800, "black": 900, "heavy": 900, "extrablack": 950, "ultrablack": 950}
_SLANTS = {"italic", "oblique", "slanted", "it"}
_WIDTHS = {"condensed": "condensed", "semicondensed": "condensed", "extracondensed": "condensed",
           "ultracondensed": "condensed", "narrow": "condensed", "compressed": "condensed",
           "expanded": "expanded", "extended": "expanded", "semiexpanded": "expanded", "wide": "expanded"}
_PREFIXES = {"semi", "demi", "extra", "ultra"}
_STYLE_WORDS = set(_WEIGHTS) | _SLANTS | set(_WIDTHS)


@dataclass(frozen=True)
class FontChoice:
    """The face a design's font name was typeset with, and why (``how`` is one of HOWS)."""

    path: str
    family: str
    style: str
    how: str
    index: int = 0                 # face index inside a .ttc collection
    category: str | None = None    # the category rule's category, when it was consulted

    def to_dict(self) -> dict[str, object]:
        return {"path": self.path, "family": self.family, "style": self.style, "how": self.how,
                "index": self.index, "category": self.category}


@dataclass(frozen=True)
class Face:
    """One installed face: where it is, its names, and its parsed style."""

    path: str
    index: int
    family: str
    style: str
    file_family_key: str
    weight: int
    italic: bool
    width: str


@dataclass(frozen=True)
class StyleRequest:
    """What a font name asks for once its style words are peeled off."""

    family_key: str   # compact key of the family part ("Roboto Bold Italic" → "roboto")
    full_key: str     # compact key of the whole name
    weight: int
    italic: bool
    width: str


class FontError(RuntimeError):
    """No usable font file at all (the render machine needs at least one installed face)."""

    reason_code = "no_fonts_installed"


# --- names -------------------------------------------------------------------------------------------------


def _tokens(name: str) -> list[str]:
    """Lower-case words of a font name: split on separators and camelCase, brackets (variable-font axes
    such as "[wght]") dropped, "Semi Bold" joined to "semibold"."""
    name = re.sub(r"\[[^\]]*\]", " ", name)
    words: list[str] = []
    for part in re.split(r"[^0-9A-Za-z\u00c0-\uffff]+", name):
        if not part:
            continue
        words.extend(w.lower() for w in re.sub(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", " ", part).split())
    merged: list[str] = []
    for word in words:
        if merged and merged[-1] in _PREFIXES and (merged[-1] + word) in _STYLE_WORDS:
            merged[-1] = merged[-1] + word
        else:
            merged.append(word)
    return merged


def compact_key(name: str) -> str:
    """Comparison key of a family name: lower case, letters and digits only ("Open Sans" → "opensans")."""
    return "".join(_tokens(name))


def parse_request(name: str) -> StyleRequest:
    """Split a design's font name into family and style ("Open Sans Italic" → opensans, 400, italic)."""
    tokens = _tokens(name)
    cut = len(tokens)
    while cut > 1 and tokens[cut - 1] in _STYLE_WORDS:
        cut -= 1
    weight, italic, width = _style_of(tokens[cut:])
    return StyleRequest("".join(tokens[:cut]), "".join(tokens), weight, italic, width)


def _style_of(words: Iterable[str]) -> tuple[int, bool, str]:
    weight, italic, width = 400, False, "normal"
    for word in words:
        if word in _WEIGHTS:
            weight = _WEIGHTS[word]
        elif word in _SLANTS:
            italic = True
        elif word in _WIDTHS:
            width = _WIDTHS[word]
    return weight, italic, width


def category_of(name: str) -> str | None:
    """The style category a font name belongs to (one of CATEGORIES), or None when nothing says."""
    request = parse_request(name)
    tokens = _tokens(name)
    keys = (request.full_key, request.family_key)
    if "cjk" in tokens or any(k.startswith(_CJK_PREFIXES) for k in keys):
        return "cjk"
    for key in keys:
        if key in KNOWN_FAMILIES:
            return KNOWN_FAMILIES[key]
    if "mono" in tokens or "monospace" in tokens or "code" in tokens or "typewriter" in tokens:
        return "mono"
    for i, word in enumerate(tokens):
        if word in ("serif", "slab") and not (i > 0 and tokens[i - 1] == "sans"):
            return "serif"
    if "sansserif" in tokens or "sans" in tokens or "grotesk" in tokens or "grotesque" in tokens or "gothic" in tokens:
        return "sans"
    if _DISPLAY_WORDS.intersection(tokens):
        return "display"
    return None


# --- scanning ----------------------------------------------------------------------------------------------


def _font_files(dirs: Sequence[str]) -> list[str]:
    found: set[str] = set()
    for folder in dirs:
        root = Path(folder).expanduser()
        if not root.is_dir():
            continue
        for dirpath, _dirnames, filenames in os.walk(root, followlinks=True):
            for filename in filenames:
                if filename.lower().endswith(FONT_SUFFIXES):
                    found.add(os.path.join(dirpath, filename))
    return sorted(found)


def _faces_of(path: str) -> list[Face]:
    """The faces of one file; names from FreeType, else from the file name (an unreadable file gives none)."""
    stem = Path(path).stem
    stem_tokens = _tokens(stem)
    cut = len(stem_tokens)
    while cut > 1 and stem_tokens[cut - 1] in _STYLE_WORDS:
        cut -= 1
    file_key = "".join(stem_tokens[:cut])
    collection = path.lower().endswith((".ttc", ".otc"))
    faces: list[Face] = []
    for index in range(MAX_COLLECTION_FACES if collection else 1):
        try:
            family, style = ImageFont.truetype(path, 12, index=index, layout_engine=ImageFont.Layout.BASIC).getname()
        except OSError:
            break  # past the last face of a collection, or not a font FreeType can read
        family = family or " ".join(stem_tokens[:cut]).title()
        style = style or "Regular"
        weight, italic, width = _style_of(_tokens(family) + _tokens(style))
        faces.append(Face(path, index, family, style, file_key if index == 0 else "", weight, italic, width))
    return faces


@lru_cache(maxsize=8)
def scan_fonts(dirs: tuple[str, ...]) -> tuple[Face, ...]:
    """Every face in these folders (recursively), sorted by path and index. Cached per folder list: a
    process scans the disk once."""
    return tuple(face for path in _font_files(dirs) for face in _faces_of(path))


# --- glyph coverage ----------------------------------------------------------------------------------------


def is_cjk(char: str) -> bool:
    """Han, kana, hangul, CJK punctuation and full-width forms."""
    code = ord(char)
    return (0x2E80 <= code <= 0x9FFF or 0xAC00 <= code <= 0xD7AF or 0xF900 <= code <= 0xFAFF
            or 0xFE30 <= code <= 0xFE4F or 0xFF00 <= code <= 0xFFEF or 0x20000 <= code <= 0x3FFFF)


@lru_cache(maxsize=512)
def load_font(path: str, index: int, size: float) -> ImageFont.FreeTypeFont:
    """A FreeType font at ``size`` px (BASIC layout, see the module docstring); cached per file and size."""
    return ImageFont.truetype(path, size, index=index, layout_engine=ImageFont.Layout.BASIC)


_PROBE_SIZE = 24
_NOTDEF_PROBE = "\U0010ffff"  # a non-character: every font draws it with its .notdef ("tofu") glyph


def _glyph_bitmap(path: str, index: int, char: str) -> bytes:
    font = load_font(path, index, _PROBE_SIZE)
    canvas = Image.new("L", (_PROBE_SIZE * 3, _PROBE_SIZE * 3))
    ImageDraw.Draw(canvas).text((_PROBE_SIZE, _PROBE_SIZE * 2), char, font=font, fill=255, anchor="ls")
    return canvas.tobytes()


@lru_cache(maxsize=65536)
def has_glyph(path: str, index: int, char: str) -> bool:
    """Whether the face draws ``char`` with a real glyph: a missing character is drawn with .notdef, so its
    bitmap equals that of a non-character. Whitespace and control characters always count as present."""
    if char.isspace() or ord(char) < 0x20:
        return True
    return _glyph_bitmap(path, index, char) != _notdef_bitmap(path, index)


@lru_cache(maxsize=256)
def _notdef_bitmap(path: str, index: int) -> bytes:
    return _glyph_bitmap(path, index, _NOTDEF_PROBE)


def missing_glyphs(choice: FontChoice, text: str) -> str:
    """The distinct characters of ``text`` the face cannot draw, in order of first appearance (ASCII is
    assumed covered, which holds for every text face the chain picks)."""
    seen: dict[str, None] = {}
    for char in text:
        if ord(char) > 0x7F and char not in seen and not has_glyph(choice.path, choice.index, char):
            seen[char] = None
    return "".join(seen)


# --- resolution --------------------------------------------------------------------------------------------


class FontResolver:
    """Maps font names to installed faces by the module's chain; one per process is enough (see
    :func:`default_resolver`). ``font_dirs`` replaces the standard folders (tests use it to be hermetic);
    ``extra_dirs`` adds a configured folder to them."""

    def __init__(self, font_dirs: Sequence[str | os.PathLike[str]] | None = None,
                 extra_dirs: Sequence[str | os.PathLike[str]] = (), cache_size: int = 4096) -> None:
        dirs = [str(d) for d in (STANDARD_FONT_DIRS if font_dirs is None else font_dirs)]
        dirs += [str(d) for d in extra_dirs]
        self.dirs: tuple[str, ...] = tuple(dict.fromkeys(dirs))
        self.faces = scan_fonts(self.dirs)
        by_family: dict[str, list[Face]] = {}
        by_file: dict[str, list[Face]] = {}
        for face in self.faces:
            request = parse_request(face.family)
            for key in dict.fromkeys((compact_key(face.family), request.family_key)):
                by_family.setdefault(key, []).append(face)
            if face.file_family_key:
                by_file.setdefault(face.file_family_key, []).append(face)
        self._by_family = by_family
        self._by_file = by_file
        self._cached = lru_cache(maxsize=cache_size)(self._resolve)

    def resolve(self, name: str | None) -> FontChoice:
        """The face for a design's font name (None or empty → fallback); cached per resolver."""
        return self._cached(name)

    def family_faces(self, family: str) -> list[Face]:
        """Installed faces of a family: by internal family name first, else by file name."""
        request = parse_request(family)
        for table in (self._by_family, self._by_file):
            for key in dict.fromkeys((request.full_key, request.family_key)):
                if key and key in table:
                    return table[key]
        return []

    def _pick(self, faces: Sequence[Face], request: StyleRequest) -> Face:
        def cost(face: Face) -> tuple[float, str, int]:
            penalty = abs(face.weight - request.weight) / 100 * 10
            penalty += 25 if face.italic != request.italic else 0
            penalty += 40 if face.width != request.width else 0
            return (penalty, face.path, face.index)

        return min(faces, key=cost)

    def _choice(self, faces: Sequence[Face], request: StyleRequest, how: str, category: str | None) -> FontChoice:
        face = self._pick(faces, request)
        return FontChoice(face.path, face.family, face.style, how, face.index, category)

    def _resolve(self, name: str | None) -> FontChoice:
        if not self.faces:
            raise FontError(f"no font files found in {list(self.dirs)}; install fonts-dejavu-core")
        request = parse_request(name or "")
        if request.full_key:
            faces = self.family_faces(name or "")
            if faces:
                return self._choice(faces, request, "exact", None)
            for key in (request.full_key, request.family_key):
                if key in ALIASES and (faces := self.family_faces(ALIASES[key])):
                    return self._choice(faces, request, "alias", None)
        category = category_of(name) if name else None
        if category is not None:
            for family in CATEGORY_FAMILIES[category]:
                if faces := self.family_faces(family):
                    return self._choice(faces, request, "category", category)
        faces = self.family_faces(LAST_RESORT) or [min(self.faces, key=lambda f: (f.family, f.path, f.index))]
        return self._choice(faces, request, "fallback", category)

    def cjk_choice(self, name: str | None) -> FontChoice | None:
        """An installed CJK face in the style the name asks for, or None when no CJK font is installed."""
        request = parse_request(name or "")
        for family in CATEGORY_FAMILIES["cjk"]:
            faces = self.family_faces(family)
            if faces and category_of(faces[0].family) == "cjk":
                return self._choice(faces, request, "cjk", "cjk")
        return None

    def resolve_for_text(self, name: str | None, text: str) -> tuple[FontChoice, str]:
        """The face for ``name`` that can draw ``text``, and the characters it still cannot draw.

        When CJK characters are missing from the chosen face and a CJK face is installed that draws more of
        the text, that face is used (``how`` = "cjk"); otherwise the choice stands and the missing characters
        come back so the caller can report them."""
        choice = self.resolve(name)
        missing = missing_glyphs(choice, text)
        if missing and any(is_cjk(c) for c in missing):
            cjk = self.cjk_choice(name)
            if cjk is not None:
                still_missing = missing_glyphs(cjk, text)
                if len(still_missing) < len(missing):
                    return cjk, still_missing
        return choice, missing

    def font(self, choice: FontChoice, size: float) -> ImageFont.FreeTypeFont:
        """The Pillow font object for a choice at ``size`` px (sizes rounded to 1/100 px for the cache)."""
        return load_font(choice.path, choice.index, round(float(size), 2))


@lru_cache(maxsize=1)
def default_resolver() -> FontResolver:
    """The process-wide resolver: the standard folders plus any in $AESFORGE_FONT_DIRS."""
    extra = [d for d in os.environ.get(FONT_DIR_ENV, "").split(os.pathsep) if d]
    return FontResolver(extra_dirs=extra)
