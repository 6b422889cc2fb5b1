"""A release table's columns, described three ways from one Arrow schema: the Hugging Face ``datasets`` features
(stored in each Parquet shard and in the card's ``dataset_info``) and the Croissant fields of its record set.

One vocabulary, so the three descriptions cannot disagree: strings, integers, floats, booleans, lists and structs of
them, and images. An image column is a struct of ``bytes`` and a relative ``path`` (the ``datasets`` Image feature);
which columns are images is declared by the release, not guessed from the struct.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pyarrow as pa

IMAGE_TYPE = pa.struct([pa.field("bytes", pa.binary()), pa.field("path", pa.string())])
"""The Arrow storage of the ``datasets`` Image feature."""

_CROISSANT_TYPES = {"string": "sc:Text", "bool": "sc:Boolean", "binary": "sc:Text"}


class UnsupportedColumn(TypeError):
    """A column whose type a release cannot describe (a query bug, not a data problem)."""


def plain_type(arrow_type: pa.DataType) -> pa.DataType:
    """``arrow_type`` in the vocabulary: extension types (DuckDB's JSON) as their storage, large and view strings as
    strings, dictionaries as their values; anything else outside the vocabulary is refused."""
    if isinstance(arrow_type, pa.ExtensionType):
        return plain_type(arrow_type.storage_type)
    if pa.types.is_dictionary(arrow_type):
        return plain_type(arrow_type.value_type)
    if pa.types.is_large_string(arrow_type) or pa.types.is_string_view(arrow_type) or pa.types.is_string(arrow_type):
        return pa.string()
    if pa.types.is_large_binary(arrow_type) or pa.types.is_binary(arrow_type):
        return pa.binary()
    if pa.types.is_integer(arrow_type) or pa.types.is_floating(arrow_type) or pa.types.is_boolean(arrow_type):
        return arrow_type
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type) or pa.types.is_list_view(arrow_type):
        return pa.list_(plain_type(arrow_type.value_type))
    if pa.types.is_struct(arrow_type):
        return pa.struct([pa.field(f.name, plain_type(f.type)) for f in arrow_type])
    if pa.types.is_null(arrow_type):
        raise UnsupportedColumn("a column that is always null has no type: CAST it in the release query")
    raise UnsupportedColumn(f"{arrow_type} is not a release column type (cast it: decimals to BIGINT or DOUBLE, "
                            "dates and timestamps to VARCHAR)")


def plain_schema(schema: pa.Schema, images: Iterable[str]) -> pa.Schema:
    """The schema a release writes: every column in the vocabulary, the declared image columns as images (a
    column of image sha256s, one or a list, becomes Image or a list of Image), no field metadata."""
    images = set(images)
    fields = []
    for field in schema:
        if field.name in images:
            many = pa.types.is_list(field.type) or pa.types.is_large_list(field.type)
            fields.append(pa.field(field.name, pa.list_(IMAGE_TYPE) if many else IMAGE_TYPE))
        else:
            try:
                fields.append(pa.field(field.name, plain_type(field.type)))
            except UnsupportedColumn as exc:
                raise UnsupportedColumn(f"column {field.name!r}: {exc}") from None
    return pa.schema(fields)


def hf_features(schema: pa.Schema, images: Iterable[str]) -> dict[str, Any]:
    """The ``datasets`` ``Features.to_dict()`` of ``schema``; stored as the shards' ``huggingface`` metadata."""
    images = set(images)
    return {field.name: _hf_feature(field.type, field.name in images) for field in schema}


def _hf_feature(arrow_type: pa.DataType, image: bool = False) -> dict[str, Any]:
    if image:
        if pa.types.is_list(arrow_type):
            return {"feature": {"_type": "Image"}, "_type": "List"}
        return {"_type": "Image"}
    if pa.types.is_list(arrow_type):
        return {"feature": _hf_feature(arrow_type.value_type), "_type": "List"}
    if pa.types.is_struct(arrow_type):
        return {f.name: _hf_feature(f.type) for f in arrow_type}
    return {"dtype": _dtype(arrow_type), "_type": "Value"}


def _dtype(arrow_type: pa.DataType) -> str:
    """The ``datasets`` dtype name: Arrow's, except ``bool`` and floats by their width."""
    if pa.types.is_boolean(arrow_type):
        return "bool"
    if pa.types.is_floating(arrow_type):
        return f"float{arrow_type.bit_width}"
    return str(arrow_type)


def card_features(schema: pa.Schema, images: Iterable[str]) -> list[dict[str, Any]]:
    """The card's ``dataset_info.features`` (the YAML form ``datasets`` reads back into the same features)."""
    images = set(images)
    return [{"name": field.name, **_yaml_feature(field.type, field.name in images)} for field in schema]


def _yaml_feature(arrow_type: pa.DataType, image: bool = False) -> dict[str, Any]:
    if image:
        return {"list": "image"} if pa.types.is_list(arrow_type) else {"dtype": "image"}
    if pa.types.is_list(arrow_type):
        inner = _yaml_feature(arrow_type.value_type)
        return {"list": inner["dtype"] if set(inner) == {"dtype"} else [inner] if "name" in inner else _listed(inner)}
    if pa.types.is_struct(arrow_type):
        return {"struct": [{"name": f.name, **_yaml_feature(f.type)} for f in arrow_type]}
    return {"dtype": _dtype(arrow_type)}


def _listed(inner: dict[str, Any]) -> Any:
    """A list's item in the card: a struct's fields as a list of named features, a nested list as its mapping."""
    return inner["struct"] if set(inner) == {"struct"} else inner


def croissant_fields(schema: pa.Schema, images: Iterable[str], record_set: str, file_set: str,
                     descriptions: dict[str, str]) -> list[dict[str, Any]]:
    """The Croissant fields of one record set read from the Parquet files of ``file_set``."""
    images = set(images)
    return [_croissant_field(f"{record_set}/{field.name}", field.name, field.type, file_set,
                             descriptions.get(field.name, ""), field.name in images, None)
            for field in schema]


def _croissant_field(field_id: str, column: str, arrow_type: pa.DataType, file_set: str, description: str,
                     image: bool, json_path: str | None) -> dict[str, Any]:
    source: dict[str, Any] = {"fileSet": {"@id": file_set}, "extract": {"column": column}}
    item_type = arrow_type.value_type if pa.types.is_list(arrow_type) else arrow_type
    path = json_path
    if image:
        path = f"{json_path}.bytes" if json_path else "bytes"
    if path:
        source["transform"] = {"jsonPath": path}
    field: dict[str, Any] = {"@type": "cr:Field", "@id": field_id, "name": field_id.rsplit("/", 1)[-1]}
    if description:
        field["description"] = description
    if pa.types.is_list(arrow_type):
        field["repeated"] = True
    if image:
        field["dataType"] = "sc:ImageObject"
    elif pa.types.is_struct(item_type):
        field["subField"] = [
            _croissant_field(f"{field_id}/{child.name}", column, child.type, file_set, "", False,
                             f"{json_path}.{child.name}" if json_path else child.name)
            for child in item_type
        ]
        return {**field, "source": {"fileSet": {"@id": file_set}, "extract": {"column": column}}}
    else:
        field["dataType"] = _croissant_type(item_type)
    return {**field, "source": source}


def _croissant_type(arrow_type: pa.DataType) -> str:
    if pa.types.is_integer(arrow_type):
        return "sc:Integer"
    if pa.types.is_floating(arrow_type):
        return "sc:Float"
    if pa.types.is_list(arrow_type) or pa.types.is_struct(arrow_type):
        return "sc:Text"  # a list inside a list or struct: read as its JSON text
    return _CROISSANT_TYPES[_dtype(arrow_type)]
