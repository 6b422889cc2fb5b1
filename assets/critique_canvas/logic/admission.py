"""Which pool images CritiqueCanvas may take, by the kind of source their kept record came from.

Benchmark images reach the shared pool too: r/photocritique post photos (source type ``reddit``) and generated poem
illustrations (``generated``). A dataset trained on them would be evaluated on its own training data, so CritiqueCanvas
admits only the source types its config lists (by default hand-curated manifests and folders); every kept pool image
it leaves out keeps a rejection that says why.
"""

from collections.abc import Iterable

POOL_SOURCE_TYPES = ("manifest", "folder", "reddit", "generated")
"""The pool's source types (assets/image_pool/logic/sources.py, ``SourceRow.source_type``)."""

DEFAULT_SOURCE_TYPES = ("manifest", "folder")
NOT_ADMITTED = "source_type_not_admitted"


def unknown_source_types(values: Iterable[str]) -> list[str]:
    """The values that are not a pool source type, in the order given."""
    return [value for value in values if value not in POOL_SOURCE_TYPES]


def not_admitted_detail(pool_item_id: str, record_id: str, source_type: str, source_name: str) -> str:
    """Why a kept pool image is not critiqued, naming the image, its record and where the record came from."""
    return (f"{pool_item_id} (record {record_id}, from {source_name}): source type {source_type!r} is not in"
            f" critique.source_types")
