"""SQL for the release columns whose warehouse values can be local: what may leave the machine, and what may not."""


def public_url(expr: str) -> str:
    """``expr`` when it is an http(s) URL, else NULL: a folder image without a configured URL prefix records the
    local file as its source (a path reference or a ``file://`` URI), which names this machine's files and helps
    no reader."""
    return f"CASE WHEN regexp_matches({expr}, '^https?://') THEN {expr} END"
