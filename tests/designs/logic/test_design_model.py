import json
from dataclasses import replace

import pytest

from assets.designs.logic.design_model import Design, Element


def _text(**kw) -> Element:
    return Element("t", "text", 10.0, 20.0, 100.0, 30.0, color=(1, 2, 3), text="Hi", font="Roboto", font_size=12.0, **kw)


def test_bold_and_italic_default_false_and_sit_after_capitalize():
    element = _text()
    assert (element.bold, element.italic) == (False, False)
    names = list(Element.__dataclass_fields__)
    assert names[names.index("capitalize") + 1: names.index("capitalize") + 3] == ["bold", "italic"]


def test_style_flags_round_trip_and_plain_elements_keep_their_old_json():
    styled = _text(bold=True, italic=True)
    data = styled.to_dict()
    assert (data["bold"], data["italic"]) == (True, True)
    assert Element.from_dict(data) == styled
    assert Element.from_dict(json.loads(json.dumps(_text(bold=True).to_dict()))) == _text(bold=True)
    # false flags are left out, so a plain design's canonical JSON (its content hash) is what it was before
    plain = _text().to_dict()
    assert "bold" not in plain and "italic" not in plain
    assert Element.from_dict(plain) == _text()
    design = Design("d", 200, 100, (_text(), replace(_text(bold=True), element_id="u")))
    again = Design.from_dict(json.loads(design.to_json()))
    assert again == design and [e.bold for e in again.elements] == [False, True]
    assert '"bold":true' in design.to_json() and '"italic"' not in design.to_json()


def test_from_dict_rejects_a_non_boolean_flag():
    data = {**_text().to_dict(), "bold": "false"}
    with pytest.raises(ValueError, match="bold must be true or false"):
        Element.from_dict(data)
