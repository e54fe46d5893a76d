"""The file-level pass that lets an import skip checking each field for unstorable text: it must flag every file
from which json or a CSV's JSON cell could parse a NUL or a lone surrogate."""

import csv
import io
import json

from hypothesis import given
from hypothesis import strategies as st

from corpus.storable_text import may_hold_unstorable, unstorable

# Every code point, surrogates included (Hypothesis leaves them out of text by default).
ANY_CHARACTER = st.characters(codec=None, exclude_categories=())


@given(st.text(ANY_CHARACTER), st.booleans())
def test_a_json_line_holding_unstorable_text_is_flagged(text, ensure_ascii):
    line = json.dumps({"summary": text, "pred_keyfact": [text], text: "x"}, ensure_ascii=ensure_ascii)
    try:
        decoded = line.encode("utf-8").decode("utf-8")
    except UnicodeEncodeError:
        return  # a raw surrogate: the file cannot be decoded, and the import says so before this pass
    if unstorable(text):
        assert may_hold_unstorable(decoded)
    assert not may_hold_unstorable(decoded) or "\\u" in decoded or "\x00" in decoded


@given(st.text(ANY_CHARACTER))
def test_a_csv_row_holding_unstorable_text_is_flagged(text):
    out = io.StringIO()
    csv.writer(out).writerow([text, json.dumps([text])])
    if unstorable(text):
        assert may_hold_unstorable(out.getvalue())


def test_ordinary_text_and_harmless_escapes_are_not_flagged():
    assert not may_hold_unstorable(json.dumps({"summary": "Café ✓ <PLACE_1> \\ back\\slash"}))
    assert not may_hold_unstorable(json.dumps({"summary": "𝔘"}, ensure_ascii=False))
    # Escaped as a surrogate pair it is flagged as well: such a file's fields are checked one by one.
    assert may_hold_unstorable(json.dumps({"summary": "𝔘"}))
    assert may_hold_unstorable(json.dumps({"summary": "\ud800"}).replace("d800", "D800"))
    assert may_hold_unstorable('{"summary": "a\\u0000b"}')
