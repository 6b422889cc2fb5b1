"""The ``croissant.json`` of a release: MLCommons Croissant 1.0 JSON-LD with its Responsible-AI fields.

One file set per config (its Parquet shards of every split) and one record set per config, whose fields come from
the same Arrow schema as the shards' ``datasets`` features (``features.croissant_fields``), plus a ``split`` field
read from each shard's file name. No build date: the file is part of the byte-identical release.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from assets.releases.logic.features import croissant_fields

CONTEXT: dict[str, Any] = {
    "@language": "en",
    "@vocab": "https://schema.org/",
    "citeAs": "cr:citeAs",
    "column": "cr:column",
    "conformsTo": "dct:conformsTo",
    "cr": "http://mlcommons.org/croissant/",
    "rai": "http://mlcommons.org/croissant/RAI/",
    "data": {"@id": "cr:data", "@type": "@json"},
    "dataType": {"@id": "cr:dataType", "@type": "@vocab"},
    "dct": "http://purl.org/dc/terms/",
    "equivalentProperty": "cr:equivalentProperty",
    "examples": {"@id": "cr:examples", "@type": "@json"},
    "extract": "cr:extract",
    "field": "cr:field",
    "fileProperty": "cr:fileProperty",
    "fileObject": "cr:fileObject",
    "fileSet": "cr:fileSet",
    "format": "cr:format",
    "includes": "cr:includes",
    "isLiveDataset": "cr:isLiveDataset",
    "jsonPath": "cr:jsonPath",
    "key": "cr:key",
    "md5": "cr:md5",
    "parentField": "cr:parentField",
    "path": "cr:path",
    "recordSet": "cr:recordSet",
    "references": "cr:references",
    "regex": "cr:regex",
    "repeated": "cr:repeated",
    "replace": "cr:replace",
    "samplingRate": "cr:samplingRate",
    "sc": "https://schema.org/",
    "separator": "cr:separator",
    "source": "cr:source",
    "subField": "cr:subField",
    "transform": "cr:transform",
}
"""The standard Croissant 1.0 context, as mlcroissant writes it."""

CONFORMS_TO = ["http://mlcommons.org/croissant/1.0", "http://mlcommons.org/croissant/RAI/1.0"]


@dataclass(frozen=True)
class RecordSetFiles:
    """One config as Croissant sees it: the schema of its rows and the splits that have shards."""

    config: str
    description: str
    schema: pa.Schema
    images: tuple[str, ...]
    key: str
    splits: tuple[str, ...]
    column_descriptions: Mapping[str, str]


@dataclass(frozen=True)
class ResponsibleAI:
    """The RAI fields, each a paragraph generated from the warehouse."""

    data_collection: str
    data_collection_type: Sequence[str]
    preprocessing: str
    annotation: str
    personal_information: str
    limitations: str
    biases: str
    use_cases: str
    sources: str


def croissant(*, name: str, description: str, licenses: Sequence[str], version: str, cite_as: str, url: str,
              record_sets: Sequence[RecordSetFiles], rai: ResponsibleAI) -> dict[str, Any]:
    """The JSON-LD document (a dict, written with sorted keys by the caller)."""
    distribution, sets = [], []
    for rs in record_sets:
        file_set = f"{rs.config}-parquet"
        distribution.append({
            "@type": "cr:FileSet", "@id": file_set, "name": file_set,
            "description": f"The Parquet shards of config {rs.config!r} (splits: {', '.join(rs.splits)}).",
            "encodingFormat": "application/x-parquet", "includes": f"data/{rs.config}/*.parquet",
        })
        split_field = {
            "@type": "cr:Field", "@id": f"{rs.config}/split", "name": "split", "dataType": "sc:Text",
            "description": "The split, read from the shard's file name.",
            "source": {"fileSet": {"@id": file_set}, "extract": {"fileProperty": "filename"},
                       "transform": {"regex": "^([a-z_]+)-\\d{5}-of-\\d{5}\\.parquet$"}},
        }
        sets.append({
            "@type": "cr:RecordSet", "@id": rs.config, "name": rs.config, "description": rs.description,
            "key": {"@id": f"{rs.config}/{rs.key}"},
            "field": [*croissant_fields(rs.schema, rs.images, rs.config, file_set, dict(rs.column_descriptions)),
                      split_field],
        })
    return {
        "@context": CONTEXT,
        "@type": "sc:Dataset",
        "conformsTo": CONFORMS_TO,
        "name": name,
        "description": description,
        "license": list(licenses),
        "url": url,
        "version": version,
        "citeAs": cite_as,
        "isLiveDataset": False,
        "distribution": distribution,
        "recordSet": sets,
        "rai:dataCollection": rai.data_collection,
        "rai:dataCollectionType": list(rai.data_collection_type),
        "rai:dataCollectionRawData": rai.sources,
        "rai:dataPreprocessingProtocol": rai.preprocessing,
        "rai:dataAnnotationProtocol": rai.annotation,
        "rai:personalSensitiveInformation": rai.personal_information,
        "rai:dataLimitations": rai.limitations,
        "rai:dataBiases": rai.biases,
        "rai:dataUseCases": rai.use_cases,
    }
