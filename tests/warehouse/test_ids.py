"""How local files are named in ids and rows: relative to the declared root, so a moved project keeps its names."""

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from warehouse.ids import file_name, file_path


@pytest.mark.parametrize(
    ("path", "root", "name"),
    [
        ("/home/u/proj/config/aesforge.yaml", "/home/u/proj/config", "aesforge.yaml"),
        ("/home/u/proj/data/sample/manifest.csv", "/home/u/proj/config", "../data/sample/manifest.csv"),
        ("/home/u/proj/config", "/home/u/proj/config", "."),
        ("/home/u/other/images/a.png", "/home/u/proj/config", "../../other/images/a.png"),
        ("/home/u/proj/config/../data/x.png", "/home/u/proj/config", "../data/x.png"),  # spelled as the loader joins
        ("/mnt/photos/a.png", "/home/u/proj/config", "/mnt/photos/a.png"),  # another mount: it does not move along
        ("/", "/home/u/proj", "/"),
    ],
)
def test_a_file_is_named_relative_to_the_root_unless_it_shares_only_the_filesystem_root(path, root, name):
    assert file_name(path, root) == name
    assert file_path(name, root) == Path(os.path.normpath(path))


def test_the_same_layout_in_two_folders_gives_the_same_names(tmp_path):
    for project in ("one", "two/deeper"):
        root = tmp_path / project / "config"
        assert file_name(root.parent / "data" / "sample" / "été 東京.png", root) == "../data/sample/été 東京.png"


def test_a_relative_path_is_the_working_directory_s_and_a_link_is_not_followed(tmp_path, monkeypatch):
    (tmp_path / "real").mkdir()
    (tmp_path / "config").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    monkeypatch.chdir(tmp_path / "config")
    assert file_name("../data/m.csv", tmp_path / "config") == "../data/m.csv"
    assert file_name(tmp_path / "link" / "a.png", tmp_path / "config") == "../link/a.png"  # what the config says


_parts = st.lists(st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="/\x00"), min_size=1,
                          max_size=6).filter(lambda part: part not in (".", "..")), min_size=1, max_size=4)


@given(top=_parts, under=_parts, root=_parts)
def test_a_name_always_leads_back_to_its_file(top, under, root):
    shared = Path("/", *top)
    path, base = shared.joinpath(*under), shared.joinpath(*root)
    name = file_name(path, base)
    assert not Path(name).is_absolute() and file_path(name, base) == path
