"""Where a Reddit post's photograph can be fetched from: ordered image candidates, and local places to find them.

Posts point at their image in many ways (direct links, galleries, imgur pages, crossposts, previews). This
module turns a normalized ``Post`` into an ordered list of candidate URLs, primary first, and says why when
there is none, so an excluded post always carries a reason. It fetches nothing: the image pool does that, and
also recognises removed-image placeholders when it decodes the bytes.
"""

from __future__ import annotations

import bisect
import fnmatch
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from assets.photocritique.logic.reddit_records import Post

NO_IMAGE = "no_image"
IMAGE_UNSUPPORTED = "image_unsupported"

DIRECT_HOSTS = frozenset({"i.redd.it", "preview.redd.it", "i.imgur.com"})
IMGUR_PAGE_HOSTS = frozenset({"imgur.com", "www.imgur.com", "m.imgur.com"})
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".webp", ".gif")
VIDEO_SUFFIXES = (".gifv", ".mp4", ".webm", ".mov")
VIDEO_HOSTS = frozenset({"v.redd.it"})
DEFAULT_NAME_PATTERN = "{post_id}*"

_IMGUR_ID = re.compile(r"[A-Za-z0-9]{5,10}")


@dataclass(frozen=True)
class ImageCandidate:
    url: str
    method: str  # direct | gallery | imgur_page | preview, prefixed "crosspost:" when read from the parent
    position: int  # 0-based place in the candidate list; 0 is the primary
    media_id: str | None = None
    width: int | None = None
    height: int | None = None


@dataclass(frozen=True)
class ImageResolution:
    candidates: tuple[ImageCandidate, ...]
    skipped: tuple[tuple[str, str], ...]  # (what, reason), e.g. (media_id, "gallery_item_failed")
    problem: tuple[str, str] | None  # (no_image | image_unsupported, detail) when there is no candidate

    @property
    def primary(self) -> ImageCandidate | None:
        return self.candidates[0] if self.candidates else None


@dataclass(frozen=True)
class _Found:
    url: str
    method: str
    media_id: str | None = None
    width: int | None = None
    height: int | None = None


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _gallery(fields: Mapping[str, Any], gallery_items: int, skipped: list[tuple[str, str]]) -> list[_Found]:
    """Usable gallery items in gallery_data order; failed, unprocessed or missing ones are noted as skipped."""
    metadata = fields.get("media_metadata") if isinstance(fields.get("media_metadata"), dict) else {}
    found: list[_Found] = []
    for index, entry in enumerate(fields["gallery_data"]["items"]):  # a list: resolve_images checks
        media_id = entry.get("media_id") if isinstance(entry, dict) else None
        label = str(media_id) if media_id else f"gallery item {index}"
        meta = metadata.get(media_id) if isinstance(media_id, str) else None
        if not isinstance(meta, dict):
            skipped.append((label, "gallery_item_missing"))
            continue
        status = meta.get("status")
        if status != "valid":
            skipped.append((label, f"gallery_item_{str(status).lower()}" if status else "gallery_item_missing"))
            continue
        source = meta.get("s") if isinstance(meta.get("s"), dict) else {}
        url = source.get("u") or source.get("gif")
        if not isinstance(url, str) or not url:
            skipped.append((label, "gallery_item_missing"))
            continue
        if len(found) >= gallery_items:
            skipped.append((label, "gallery_extra"))
            continue
        found.append(_Found(url, "gallery", media_id, _int_or_none(source.get("x")), _int_or_none(source.get("y"))))
    return found


def _link(url: str) -> tuple[_Found | None, tuple[str, str] | None]:
    """A post's link as an image: (candidate, None), (None, (skip reason, detail)) when unsupported, or (None, None)
    (also for text that does not parse as a URL, such as an unclosed IPv6 bracket)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return None, None
    host = (parts.hostname or "").lower()
    path = parts.path.lower()
    if host in VIDEO_HOSTS or path.endswith(VIDEO_SUFFIXES):
        return None, ("video_unsupported", f"video link {url}")
    if host in DIRECT_HOSTS or path.endswith(IMAGE_SUFFIXES):
        return _Found(url, "direct"), None
    if host in IMGUR_PAGE_HOSTS:
        segments = [segment for segment in parts.path.split("/") if segment]
        if len(segments) == 1 and _IMGUR_ID.fullmatch(segments[0]):
            return _Found(f"https://i.imgur.com/{segments[0]}.jpg", "imgur_page"), None
        if len(segments) >= 2 and segments[0] in ("a", "gallery"):
            return None, ("album_unsupported", f"imgur album {url}")
    return None, None


def _preview(fields: Mapping[str, Any]) -> _Found | None:
    preview = fields.get("preview")
    images = preview.get("images") if isinstance(preview, dict) else None
    first = images[0] if isinstance(images, list) and images and isinstance(images[0], dict) else {}
    source = first.get("source") if isinstance(first.get("source"), dict) else {}
    url = source.get("url")
    if not isinstance(url, str) or not url:
        return None
    return _Found(url, "preview", None, _int_or_none(source.get("width")), _int_or_none(source.get("height")))


def resolve_images(post: Post, gallery_items: int = 1) -> ImageResolution:
    """Ordered image candidates for a post (URLs already unescaped by the normalizer), or why there is none.

    A crosspost is resolved through its parent; the preview, the parent's and then the post's own, is appended
    as a fallback and becomes the primary when nothing else resolved.
    """
    if gallery_items < 1:
        raise ValueError("gallery_items must be at least 1")
    media = post.media
    parents = media.get("crosspost_parent_list") or []
    fields, prefix = (parents[0], "crosspost:") if parents else (media, "")
    skipped: list[tuple[str, str]] = []
    found: list[_Found] = []
    unsupported: str | None = None
    no_image = "post is a self post without an image" if fields.get("is_self") else "post has no link"

    gallery_data = fields.get("gallery_data")
    url = fields.get("url")
    if fields.get("is_gallery"):
        if isinstance(gallery_data, dict) and isinstance(gallery_data.get("items"), list) and gallery_data["items"]:
            found = _gallery(fields, gallery_items, skipped)
            no_image = f"gallery has no valid item ({len(skipped)} skipped)"
        else:
            no_image = "gallery has no items"
    elif isinstance(url, str) and url and not fields.get("is_self"):
        link, unsupported_link = _link(url)
        if link:
            found.append(link)
        elif unsupported_link:
            skipped.append((url, unsupported_link[0]))
            unsupported = unsupported_link[1]
        else:
            no_image = f"link is not an image: {url}"
    found = [_Found(f.url, prefix + f.method, f.media_id, f.width, f.height) for f in found]

    fallbacks = [(_preview(fields), prefix)] + ([(_preview(media), "")] if parents else [])
    for preview, preview_prefix in fallbacks:
        if preview and all(preview.url != f.url for f in found):
            found.append(_Found(preview.url, preview_prefix + preview.method, None, preview.width, preview.height))

    candidates = tuple(
        ImageCandidate(f.url, f.method, position, f.media_id, f.width, f.height) for position, f in enumerate(found)
    )
    problem = None
    if not candidates:
        problem = (IMAGE_UNSUPPORTED, unsupported) if unsupported else (NO_IMAGE, no_image)
    return ImageResolution(candidates=candidates, skipped=tuple(skipped), problem=problem)


# --- where to read a candidate from ----------------------------------------------------------------------------


@lru_cache(maxsize=8)
def _sorted_names(directory: str, mtime_ns: int) -> tuple[str, ...]:
    """Directory listing, sorted once per directory state, so a lookup is a bisect instead of a full scan."""
    with os.scandir(directory) as entries:
        return tuple(sorted(entry.name for entry in entries if entry.is_file()))


def _literal_prefix(pattern: str) -> str:
    cut = min((i for i, char in enumerate(pattern) if char in "*?["), default=len(pattern))
    return pattern[:cut]


def _find_local(local_dir: str | Path, post_id: str, pattern: str) -> str | None:
    directory = os.fspath(local_dir)
    try:
        names = _sorted_names(directory, os.stat(directory).st_mtime_ns)
    except OSError:
        return None
    prefix = _literal_prefix(pattern)
    # "{post_id}*" would also match a longer id that starts with this one; such a file is another post's.
    guard = len(prefix) if prefix.endswith(post_id) else None
    start = bisect.bisect_left(names, prefix)
    for name in names[start:]:
        if not name.startswith(prefix):
            break
        if guard is not None and len(name) > guard and name[guard].isalnum():
            continue
        if fnmatch.fnmatchcase(name, pattern):
            return os.path.join(directory, name)
    return None


def _is_url(text: str) -> bool:
    return urlsplit(text).scheme in ("http", "https")


def _under_folder(folder: str, rest: str) -> str | None:
    """A URL tail as a path inside a mirror folder (query dropped); None if it would leave the folder."""
    parts = [unquote(part) for part in urlsplit(rest).path.split("/") if part]
    if not parts or any(part in (".", "..") or os.sep in part for part in parts):
        return None
    return os.path.join(folder, *parts)


def locate(
    url: str,
    post_id: str,
    position: int,
    local_dir: str | Path | None = None,
    name_pattern: str = DEFAULT_NAME_PATTERN,
    rewrite: Mapping[str, str] | None = None,
    network: bool = True,
) -> str | None:
    """What the image pool should fetch for one candidate: a local file, a mirror URL or path, or the URL itself;
    None when only the network could supply it and ``network`` is off (a local folder the user made authoritative).

    ``name_pattern`` is a glob over file names in ``local_dir`` with ``{post_id}`` and ``{position}`` filled in;
    the first match in name order wins. ``rewrite`` maps URL prefixes to a mirror URL or a local folder; the first
    prefix (in mapping order) that matches is used.
    """
    if local_dir is not None:
        found = _find_local(local_dir, post_id, name_pattern.format(post_id=post_id, position=position))
        if found:
            return found
    for prefix, replacement in (rewrite or {}).items():
        if not url.startswith(prefix):
            continue
        rest = url[len(prefix) :]
        if _is_url(replacement):
            if network:
                return replacement + rest
            continue
        path = _under_folder(replacement, rest)
        if path is not None:
            return path
    return url if network else None
