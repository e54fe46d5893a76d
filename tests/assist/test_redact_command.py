"""The `redact` command on a booking dataset written for these tests (tests/fixtures/redact), JSONL and CSV alike."""

import json
import shutil
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from corpus.importing import read_csv
from corpus.models import Document, KeyFact, Summary

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "redact"
# Every piece of personal data in the rail-1 document, its reference, key-facts and summaries.
PII = ("Ely", "Norwich", "Friday", "Saturday", "TR2061", "08:15", "09:40", "07700 900461", "QX7TRB21",
       "01223 354017", "01223354017")
DOCUMENT = (
    "USER: I need a train from <PLACE_1> to <PLACE_2> on <DAY_1>.\n"
    "SYSTEM: <CODE_1> leaves <PLACE_1> at <TIME_1> and reaches <PLACE_2> at <TIME_2>. Shall I book it?\n"
    "USER: Yes, for two. My number is <PHONENUMBER_1>.\n"
    "SYSTEM: Booked. Your reference is <CODE_2>. Call <PHONENUMBER_2> if your plans change on <DAY_1>."
)


def redact_file(tmp_path, name, out_name, *extra):
    out = tmp_path / out_name
    call_command("redact", str(FIXTURES / name), "--out", str(out), "--rules", "--spans",
                 str(FIXTURES / "spans.json"), *extra, verbosity=0)
    return out


def read_jsonl(path):
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def read_redacted_csv(path):
    errors = []
    rows = [row.values for row in read_csv(path.read_text("utf-8"), errors)]
    assert errors == []
    return rows


def by_model(rows, uid="rail-1"):
    return {row["model"]: row for row in rows if row["uid"] == uid}


def test_it_redacts_the_summaries_reference_and_key_facts_with_the_documents_placeholders(tmp_path):
    rows = read_jsonl(redact_file(tmp_path, "booking.jsonl", "out.jsonl"))

    good, bad = by_model(rows)["m-good"], by_model(rows)["m-bad"]
    for row in (good, bad):
        assert row["document"] == DOCUMENT
        assert row["reference"] == ("A train from <PLACE_1> to <PLACE_2> on <DAY_1> was booked for two with "
                                    "reference <CODE_2>.")
        assert row["pred_keyfact"] == ["The train goes from <PLACE_1> to <PLACE_2>.", "The train leaves at <TIME_1>.",
                                       "The reference is <CODE_2>."]
        assert row["keyfact"] == ["The train goes from <PLACE_1> to <PLACE_2>."]
        assert row["redact_type"] == "redacted"
    assert good["summary"] == ("The user booked a train from <PLACE_1> to <PLACE_2> on <DAY_1>, leaving at "
                               "<TIME_1>. The booking reference is <CODE_2>.")
    # The places the person marked once in the source are found again in the summary; the summary's own errors stay
    # visible against the source: swapped places, another day (a new number), the source's phone number written
    # without its space (the same number).
    assert bad["summary"] == ("The user booked train <CODE_1> from <PLACE_2> to <PLACE_1> on <DAY_2>. "
                              "They can call <PHONENUMBER_2>.")
    dumped = json.dumps([row for row in rows if row["uid"] == "rail-1"])
    assert [entity for entity in PII if entity in dumped] == []


def test_it_redacts_given_sentences_one_by_one_and_keeps_their_number(tmp_path):
    good = by_model(read_jsonl(redact_file(tmp_path, "booking.jsonl", "out.jsonl")))["m-good"]

    assert good["sentences"] == ["The user booked a train from <PLACE_1> to <PLACE_2> on <DAY_1>, leaving at <TIME_1>.",
                                 "The booking reference is <CODE_2>."]
    assert " ".join(good["sentences"]) == good["summary"]


def test_a_document_with_nothing_to_replace_is_left_as_it_was(tmp_path):
    rows = read_jsonl(redact_file(tmp_path, "booking.jsonl", "out.jsonl"))
    given = [json.loads(line) for line in (FIXTURES / "booking.jsonl").read_text("utf-8").splitlines()]

    museum = [row for row in rows if row["uid"] == "museum-1"]
    assert museum == [row for row in given if row["uid"] == "museum-1"]
    assert museum[0]["redact_type"] == "non-redacted"


def test_csv_input_gives_the_same_rows_as_jsonl_in_the_imports_csv_format(tmp_path):
    from_jsonl = read_jsonl(redact_file(tmp_path, "booking.jsonl", "out.jsonl"))
    out = redact_file(tmp_path, "booking.csv", "out.csv")

    assert out.read_text("utf-8").splitlines()[0] == (FIXTURES / "booking.csv").read_text("utf-8").splitlines()[0]
    from_csv = read_redacted_csv(out)
    assert len(from_csv) == len(from_jsonl) == 3
    for csv_row, jsonl_row in zip(from_csv, from_jsonl):
        assert csv_row == jsonl_row
    # And the other way round: JSONL in, CSV out.
    assert read_redacted_csv(redact_file(tmp_path, "booking.jsonl", "again.csv")) == from_csv


@pytest.mark.django_db
@pytest.mark.parametrize("out_name", ["out.jsonl", "out.csv"])
def test_the_redacted_file_imports_with_placeholders_everywhere(tmp_path, out_name):
    out = redact_file(tmp_path, "booking.csv" if out_name.endswith("csv") else "booking.jsonl", out_name)

    call_command("import_dataset", str(out), "--project", "redacted", verbosity=0)

    document = Document.objects.get(uid="rail-1")
    assert document.text == DOCUMENT and document.is_redacted
    texts = [document.reference, *KeyFact.objects.filter(document=document).values_list("text", flat=True)]
    for summary in Summary.objects.filter(document=document):
        texts += [summary.text, *summary.sentences.values_list("text", flat=True)]
    assert [entity for entity in PII if any(entity in text for text in texts)] == []
    good = Summary.objects.get(document=document, model="m-good")
    assert list(good.sentences.order_by("index").values_list("text", flat=True))[1] == \
        "The booking reference is <CODE_2>."
    assert not Document.objects.get(uid="museum-1").is_redacted


def write(path: Path, text: str) -> Path:
    path.write_text(text, "utf-8")
    return path


@pytest.mark.parametrize("name, content, spans, message", [
    ("bad.jsonl", '{"uid": "rail-1", "doc_id": "x"}\n', None, "missing required field"),
    ("bad.jsonl", "not json\n", None, "not valid JSON"),
    ("bad.csv", "uid,doc_id\nrail-1,x\n", None, "lacks required column"),
    ("bad.txt", "whatever\n", None, "cannot tell the format"),
    ("booking.jsonl", None, {"rail-1": [[0, 5, "PLACE"], [3, 8, "PLACE"]]}, "overlap"),
    ("booking.jsonl", None, {"rail-1": [[0, 5, "COLOUR"]]}, "Unknown redaction category"),
    ("booking.jsonl", None, {"rail-2": [[0, 5, "PLACE"]]}, "not in booking.jsonl: rail-2"),
    ("booking.jsonl", None, ["not", "a", "mapping"], "must map each uid"),
])
def test_bad_input_is_refused_and_nothing_is_written(tmp_path, capsys, name, content, spans, message):
    source = write(tmp_path / name, content) if content else shutil.copy(FIXTURES / name, tmp_path / name)
    out = write(tmp_path / "out.jsonl", "an earlier result\n")
    arguments = [str(source), "--out", str(out), "--rules"]
    if spans is not None:
        arguments += ["--spans", str(write(tmp_path / "spans.json", json.dumps(spans)))]

    with pytest.raises(CommandError) as raised:
        call_command("redact", *arguments, verbosity=0)

    assert message in f"{raised.value}\n{capsys.readouterr().err}"
    assert out.read_text("utf-8") == "an earlier result\n"
    assert [path.name for path in tmp_path.iterdir() if path.name.startswith(".")] == []  # No temporary file left.


def test_rows_of_one_uid_with_different_documents_are_refused(tmp_path, capsys):
    rows = [json.loads(line) for line in (FIXTURES / "booking.jsonl").read_text("utf-8").splitlines()]
    rows[1]["document"] += " Goodbye."
    source = write(tmp_path / "in.jsonl", "".join(json.dumps(row) + "\n" for row in rows))

    with pytest.raises(CommandError, match="nothing written"):
        call_command("redact", str(source), "--out", str(tmp_path / "out.csv"), "--rules", verbosity=0)

    assert "line 1: rows of uid 'rail-1' differ in 'document'" in capsys.readouterr().err
    assert [path.name for path in tmp_path.iterdir()] == ["in.jsonl"]


def test_an_output_that_cannot_be_written_is_a_clear_error_and_leaves_nothing_behind(tmp_path):
    (tmp_path / "out.jsonl").mkdir()

    with pytest.raises(CommandError, match="cannot write .*out.jsonl"):
        redact_file(tmp_path, "booking.jsonl", "out.jsonl")

    assert [path.name for path in tmp_path.iterdir()] == ["out.jsonl"]


def test_it_needs_spans_or_rules(tmp_path):
    with pytest.raises(CommandError, match="--spans FILE, --rules"):
        call_command("redact", str(FIXTURES / "booking.jsonl"), "--out", str(tmp_path / "out.jsonl"))
