import os

import pytest

from assets.photocritique.logic.image_links import ImageCandidate, locate, resolve_images
from assets.photocritique.logic.reddit_records import UsernameHasher, normalize_submission
from resources.reddit_sources import Origin, RawItem

HASHER = UsernameHasher("test-salt")


def post_with(**fields):
    data = {"id": "p1", "subreddit": "photocritique", "author": "someone", "title": "t", "created_utc": 1600000000,
            "is_self": False}
    data.update(fields)
    return normalize_submission(RawItem("submission", data, Origin("dump", "/d/RS.zst", 1, 0)), HASHER)


def preview(url, width=1200, height=800):
    return {"images": [{"source": {"url": url, "width": width, "height": height}, "resolutions": []}]}


def gallery_meta(status="valid", url=None, **extra):
    meta = {"status": status, "e": "Image", "m": "image/jpg", **extra}
    if url:
        meta["s"] = {"u": url, "x": 4000, "y": 3000}
    return meta


def urls(resolution):
    return [(c.url, c.method) for c in resolution.candidates]


@pytest.mark.parametrize(
    "url",
    ["https://i.redd.it/abc.jpg", "https://preview.redd.it/abc.png?width=960&amp;s=f00", "https://i.imgur.com/AbCdE",
     "https://example.org/photos/shot.JPEG", "https://example.org/anim.gif"],
)
def test_direct_links(url):
    resolution = resolve_images(post_with(url=url))
    assert urls(resolution) == [(url.replace("&amp;", "&"), "direct")]
    assert resolution.problem is None and resolution.primary.position == 0


def test_gallery_follows_gallery_data_order_and_skips_unusable_items():
    media_metadata = {
        "m1": gallery_meta("failed"),
        "m2": gallery_meta("valid", "https://preview.redd.it/m2.jpg?width=4000&amp;s=x"),
        "m3": gallery_meta("unprocessed"),
        "m4": gallery_meta("valid", "https://preview.redd.it/m4.jpg"),
        "m5": gallery_meta("valid", "https://preview.redd.it/m5.jpg"),
    }
    items = [{"media_id": m, "id": n} for n, m in enumerate(["m3", "m1", "m9", "m4", "m2", "m5"])]
    post = post_with(is_gallery=True, url="https://www.reddit.com/gallery/p1", gallery_data={"items": items},
                     media_metadata=media_metadata)
    one = resolve_images(post)
    assert urls(one) == [("https://preview.redd.it/m4.jpg", "gallery")]
    assert (one.candidates[0].media_id, one.candidates[0].width, one.candidates[0].height) == ("m4", 4000, 3000)
    assert one.skipped == (("m3", "gallery_item_unprocessed"), ("m1", "gallery_item_failed"), ("m9", "gallery_item_missing"),
                           ("m2", "gallery_extra"), ("m5", "gallery_extra"))
    two = resolve_images(post, gallery_items=2)
    assert urls(two) == [("https://preview.redd.it/m4.jpg", "gallery"), ("https://preview.redd.it/m2.jpg?width=4000&s=x", "gallery")]
    assert [c.position for c in two.candidates] == [0, 1]


def test_gallery_with_no_valid_item_falls_back_to_preview_or_has_no_image():
    fields = dict(is_gallery=True, url="https://www.reddit.com/gallery/p1", gallery_data={"items": [{"media_id": "m1"}]},
                  media_metadata={"m1": gallery_meta("failed")})
    bare = resolve_images(post_with(**fields))
    assert bare.candidates == () and bare.problem[0] == "no_image" and "gallery" in bare.problem[1]
    assert bare.skipped == (("m1", "gallery_item_failed"),)
    rescued = resolve_images(post_with(**fields, preview=preview("https://preview.redd.it/pv.jpg?a=1&amp;b=2")))
    assert urls(rescued) == [("https://preview.redd.it/pv.jpg?a=1&b=2", "preview")] and rescued.problem is None


def test_imgur_page_becomes_a_direct_link_and_albums_are_unsupported():
    assert urls(resolve_images(post_with(url="https://imgur.com/AbC12xy"))) == [("https://i.imgur.com/AbC12xy.jpg", "imgur_page")]
    assert urls(resolve_images(post_with(url="http://m.imgur.com/AbC12xy/"))) == [("https://i.imgur.com/AbC12xy.jpg", "imgur_page")]
    for album in ("https://imgur.com/a/AbC12", "https://imgur.com/gallery/AbC12"):
        resolution = resolve_images(post_with(url=album))
        assert resolution.candidates == () and resolution.problem[0] == "image_unsupported" and album in resolution.problem[1]
        assert resolution.skipped == ((album, "album_unsupported"),)


@pytest.mark.parametrize("url", ["https://v.redd.it/vid123", "https://i.imgur.com/AbCdE.gifv"])
def test_videos_are_unsupported_unless_a_preview_exists(url):
    video = resolve_images(post_with(url=url))
    assert video.problem[0] == "image_unsupported" and video.skipped == ((url, "video_unsupported"),)
    with_preview = resolve_images(post_with(url=url, preview=preview("https://external-preview.redd.it/v.jpg")))
    assert urls(with_preview) == [("https://external-preview.redd.it/v.jpg", "preview")] and with_preview.problem is None


def test_crosspost_is_resolved_through_its_parent_with_own_preview_as_fallback():
    parent = {"id": "par01", "url": "https://imgur.com/XyZ12ab", "is_self": False,
              "preview": preview("https://preview.redd.it/parent.jpg")}
    post = post_with(url="/r/photocritique/comments/par01/", crosspost_parent="t3_par01", crosspost_parent_list=[parent],
                     preview=preview("https://preview.redd.it/own.jpg", 640, 480))
    resolution = resolve_images(post)
    assert urls(resolution) == [
        ("https://i.imgur.com/XyZ12ab.jpg", "crosspost:imgur_page"),
        ("https://preview.redd.it/parent.jpg", "crosspost:preview"),
        ("https://preview.redd.it/own.jpg", "preview"),
    ]
    assert resolution.candidates[2] == ImageCandidate("https://preview.redd.it/own.jpg", "preview", 2, None, 640, 480)


def test_preview_is_not_repeated_when_it_is_the_direct_link():
    url = "https://preview.redd.it/same.jpg"
    assert urls(resolve_images(post_with(url=url, preview=preview(url)))) == [(url, "direct")]


def test_non_image_link_and_self_post_have_no_image():
    link = resolve_images(post_with(url="https://www.flickr.com/photos/someone/123"))
    assert link.problem == ("no_image", "link is not an image: https://www.flickr.com/photos/someone/123")
    selfpost = resolve_images(post_with(is_self=True, selftext="words", url="https://www.reddit.com/r/photocritique/comments/p1/"))
    assert selfpost.candidates == () and selfpost.problem[0] == "no_image" and "self post" in selfpost.problem[1]
    with pytest.raises(ValueError):
        resolve_images(post_with(url="https://i.redd.it/a.jpg"), gallery_items=0)


def test_locate_prefers_a_local_file_by_pattern(tmp_path):
    for name in ("abc12.jpg", "abc123.jpg", "abc12_1.png", "zzz.jpg"):
        (tmp_path / name).write_bytes(b"x")
    url = "https://i.redd.it/abc.jpg"
    assert locate(url, "abc12", 0, tmp_path) == os.path.join(tmp_path, "abc12.jpg")
    assert locate(url, "abc12", 1, tmp_path, "{post_id}_{position}.*") == os.path.join(tmp_path, "abc12_1.png")
    # "abc1*" would glob abc12.jpg too, but that file belongs to another post.
    assert locate(url, "abc1", 0, tmp_path) == url
    assert locate(url, "nope9", 0, tmp_path) == url
    (tmp_path / "nope9.webp").write_bytes(b"x")  # added after the listing was cached
    os.utime(tmp_path, ns=(1, 1))
    assert locate(url, "nope9", 0, tmp_path) == os.path.join(tmp_path, "nope9.webp")
    assert locate(url, "abc12", 0, tmp_path / "missing-dir") == url


def test_locate_rewrites_prefixes_to_mirrors_and_folders(tmp_path):
    rewrite = {"https://i.redd.it/": "http://127.0.0.1:9/mirror/", "https://i.imgur.com/": str(tmp_path / "imgur")}
    assert locate("https://i.redd.it/abc.jpg", "p1", 0, rewrite=rewrite) == "http://127.0.0.1:9/mirror/abc.jpg"
    assert locate("https://i.imgur.com/Xy%20Z.jpg?1", "p1", 0, rewrite=rewrite) == os.path.join(tmp_path, "imgur", "Xy Z.jpg")
    assert locate("https://i.imgur.com/../../etc/passwd", "p1", 0, rewrite=rewrite) == "https://i.imgur.com/../../etc/passwd"
    assert locate("https://example.org/a.jpg", "p1", 0, rewrite=rewrite) == "https://example.org/a.jpg"
    first_wins = {"https://i.redd.it/": "http://127.0.0.1:9/a/", "https://i.redd.it/x": "http://127.0.0.1:9/b/"}
    assert locate("https://i.redd.it/x.jpg", "p1", 0, rewrite=first_wins) == "http://127.0.0.1:9/a/x.jpg"
    (tmp_path / "p1.jpg").write_bytes(b"x")
    assert locate("https://i.redd.it/abc.jpg", "p1", 0, tmp_path, rewrite=rewrite) == os.path.join(tmp_path, "p1.jpg")


def test_without_network_only_local_places_are_offered(tmp_path):
    """An authoritative local folder: a file there, or under a url_rewrite folder, and never a URL or mirror URL."""
    (tmp_path / "local").mkdir()
    (tmp_path / "local" / "p1.jpg").write_bytes(b"x")
    rewrite = {"https://i.redd.it/": "http://127.0.0.1:9/mirror/", "https://i.imgur.com/": str(tmp_path / "imgur")}
    local = tmp_path / "local"
    assert locate("https://i.redd.it/a.jpg", "p1", 0, local, rewrite=rewrite, network=False) == str(local / "p1.jpg")
    assert locate("https://i.redd.it/a.jpg", "p2", 0, local, rewrite=rewrite, network=False) is None
    assert locate("https://i.redd.it/a.jpg", "p2", 0, local, rewrite=rewrite) == "http://127.0.0.1:9/mirror/a.jpg"
    assert locate("https://example.org/a.jpg", "p2", 0, local, network=False) is None
    assert locate("https://i.imgur.com/b.jpg", "p2", 0, local, rewrite=rewrite, network=False) == os.path.join(
        tmp_path, "imgur", "b.jpg")


@pytest.mark.parametrize(
    "fields",
    [{"url": "http://[not-closed/x.jpg"}, {"is_gallery": True, "gallery_data": {"items": 5}}],
)
def test_a_link_that_is_no_url_or_a_gallery_without_an_item_list_is_no_image(fields):
    resolution = resolve_images(post_with(**fields))
    assert resolution.candidates == () and resolution.problem[0] == "no_image"
