"""The three descriptions of a release table agree with what ``datasets`` itself derives and reads back."""

import datasets
import pyarrow as pa
import pytest

from assets.releases.logic.features import (
    IMAGE_TYPE, UnsupportedColumn, card_features, croissant_fields, hf_features, plain_schema,
)

SCHEMA = pa.schema([
    ("id", pa.large_string()), ("n", pa.int32()), ("x", pa.float64()), ("ok", pa.bool_()),
    ("tags", pa.list_(pa.string())), ("prov", pa.struct([("m", pa.string()), ("calls", pa.list_(pa.string()))])),
    ("crit", pa.list_(pa.struct([("rank", pa.int64()), ("body", pa.string_view())]))),
    ("image", pa.string()), ("images", pa.list_(pa.string())),
])
IMAGES = ("image", "images")


def test_plain_schema_turns_declared_sha_columns_into_images_and_large_or_view_strings_into_strings():
    schema = plain_schema(SCHEMA, IMAGES)
    assert schema.field("image").type == IMAGE_TYPE and schema.field("images").type == pa.list_(IMAGE_TYPE)
    assert schema.field("id").type == pa.string() and schema.field("crit").type.value_type.field("body").type == pa.string()


def test_features_match_what_datasets_derives_from_the_arrow_schema():
    schema = plain_schema(SCHEMA, IMAGES)
    ours = datasets.Features.from_dict(hf_features(schema, IMAGES))
    theirs = datasets.Features.from_arrow_schema(schema)
    assert {k: ours[k] for k in ours if k not in IMAGES} == {k: theirs[k] for k in theirs if k not in IMAGES}
    assert isinstance(ours["image"], datasets.Image) and isinstance(ours["images"].feature, datasets.Image)
    assert ours.arrow_schema == schema  # the features store exactly the shards' schema


def test_card_features_are_the_yaml_datasets_writes_for_the_same_features():
    schema = plain_schema(SCHEMA, IMAGES)
    info = datasets.DatasetInfo(features=datasets.Features.from_dict(hf_features(schema, IMAGES)))
    assert card_features(schema, IMAGES) == info._to_yaml_dict()["features"]


def test_croissant_fields_nest_structs_repeat_lists_and_read_image_bytes():
    fields = {f["name"]: f for f in croissant_fields(plain_schema(SCHEMA, IMAGES), IMAGES, "rs", "fs", {"id": "the key"})}
    assert fields["id"]["dataType"] == "sc:Text" and fields["id"]["description"] == "the key"
    assert fields["tags"]["repeated"] and fields["n"]["dataType"] == "sc:Integer" and fields["x"]["dataType"] == "sc:Float"
    assert [s["name"] for s in fields["prov"]["subField"]] == ["m", "calls"]
    assert fields["prov"]["subField"][1]["source"]["transform"] == {"jsonPath": "calls"}
    assert fields["crit"]["repeated"] and fields["crit"]["subField"][0]["dataType"] == "sc:Integer"
    assert fields["image"]["dataType"] == "sc:ImageObject" and fields["image"]["source"]["transform"] == {"jsonPath": "bytes"}
    assert fields["images"]["repeated"]


@pytest.mark.parametrize("arrow_type, hint", [(pa.null(), "CAST"), (pa.decimal128(38, 0), "BIGINT"), (pa.timestamp("us"), "VARCHAR")])
def test_types_a_release_cannot_describe_are_refused_with_the_column_and_the_fix(arrow_type, hint):
    with pytest.raises(UnsupportedColumn, match=rf"column 'bad'.*{hint}"):
        plain_schema(pa.schema([("bad", arrow_type)]), ())
