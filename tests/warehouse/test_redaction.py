"""Credentials in URLs are replaced by REDACTED; everything else in the URL and around it is kept as it was."""

import pytest

from warehouse.redaction import REDACTED, redact_text, redact_url, redact_value


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://user:KEY@host.example/v1", f"https://{REDACTED}@host.example/v1"),
        ("http://KEYONLY@127.0.0.1:8080/v1", f"http://{REDACTED}@127.0.0.1:8080/v1"),
        ("https://host/v1?key=KEY", f"https://host/v1?key={REDACTED}"),
        ("https://host/v1?model=m&API_KEY=KEY&x=1", f"https://host/v1?model=m&API_KEY={REDACTED}&x=1"),
        ("https://host/p?apikey=A&token=B&access_token=C&sig=D&Signature=E&secret=F&password=G",
         "https://host/p?" + "&".join(f"{n}={REDACTED}" for n in
                                     ["apikey", "token", "access_token", "sig", "Signature", "secret", "password"])),
        ("https://bucket.s3/x?X-Amz-Signature=abc&X-Amz-Date=1", f"https://bucket.s3/x?X-Amz-Signature={REDACTED}&X-Amz-Date=1"),
        ("https://u:p%40ss@host/v1?key=K#frag", f"https://{REDACTED}@host/v1?key={REDACTED}#frag"),
        ("https://host/search?q=a%2Cb&keyword=x", "https://host/search?q=a%2Cb&keyword=x"),  # 'keyword' is no key
        ("https://host:8443/v1", "https://host:8443/v1"),
        ("http://[::1", REDACTED),  # cannot be taken apart: hidden whole rather than kept
    ],
)
def test_redact_url(url, expected):
    assert redact_url(url) == expected


def test_redact_text_finds_urls_inside_text_and_leaves_the_rest():
    assert redact_text("openai@http://u:SECRET@127.0.0.1:9/v1?key=SECRET") == f"openai@http://{REDACTED}@127.0.0.1:9/v1?key={REDACTED}"
    message = 'connection failed: "https://h/v1?token=T" refused; retry later'
    assert redact_text(message) == f'connection failed: "https://h/v1?token={REDACTED}" refused; retry later'
    assert redact_text("no url here: key=value") == "no url here: key=value"
    assert redact_text("") == ""


def test_redact_value_walks_nested_parameters():
    params = {
        "roles": {"planner": {"provider": "openai", "base_url": "https://a:B@h/v1", "temperature": 0.2}},
        "endpoints": ["https://h/v1?key=K", 3, None, True],
        "pair": ("https://h/?sig=S", "plain"),
    }
    assert redact_value(params) == {
        "roles": {"planner": {"provider": "openai", "base_url": f"https://{REDACTED}@h/v1", "temperature": 0.2}},
        "endpoints": [f"https://h/v1?key={REDACTED}", 3, None, True],
        "pair": [f"https://h/?sig={REDACTED}", "plain"],
    }
