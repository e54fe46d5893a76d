"""The import rules (README, "Importing a dataset"), exercised through the management command with real files."""

import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from corpus.importing import DatasetError, import_dataset
from corpus.models import Document, DocumentSentence, KeyFact, Project, Summary, SummarySentence

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "import"
SMALL_JSONL = FIXTURES / "small.jsonl"
SMALL_CSV = FIXTURES / "small.csv"

pytestmark = pytest.mark.django_db


def rows() -> list[dict]:
    return [json.loads(line) for line in SMALL_JSONL.read_text().splitlines()]


def write_jsonl(path: Path, items: list[dict]) -> Path:
    path.write_text("".join(json.dumps(item) + "\n" for item in items), encoding="utf-8")
    return path


def counts() -> tuple[int, ...]:
    return tuple(
        model.objects.count() for model in (Document, DocumentSentence, Summary, SummarySentence, KeyFact)
    )


def import_file(path: Path, slug: str = "alpha") -> None:
    call_command("import_dataset", str(path), "--project", slug, verbosity=0)


def import_errors(path: Path, slug: str = "alpha") -> list[str]:
    project, _ = Project.objects.get_or_create(slug=slug, defaults={"name": slug})
    with pytest.raises(DatasetError) as excinfo:
        import_dataset(project=project, data=path.read_bytes(), filename=path.name)
    return [str(error) for error in excinfo.value.errors]


def test_it_imports_jsonl_and_creates_the_project():
    import_file(SMALL_JSONL, "fresh")
    project = Project.objects.get(slug="fresh")
    assert project.documents.count() == 2
    assert Summary.objects.filter(document__project=project).count() == 4
    news = project.documents.get(uid="t-news-1")
    assert news.input_type == "non-dialogue" and news.length == "short"  # computed: 35 words < 900
    assert [s.text for s in news.sentences.all()] == [
        "The Harbor Council voted 7-2 on Monday to rebuild the old ferry pier.",
        "The project will cost 4.2 million dollars, Mayor Ines Okafor said.",
        "Work starts in May.",
    ]
    assert [(k.index, k.origin, k.status) for k in news.keyfacts.all()] == [
        (0, "imported", "candidate"), (1, "imported", "candidate"),
    ]


def test_it_splits_dialogues_by_speaker_turn_and_keeps_placeholders():
    import_file(SMALL_JSONL)
    dialogue = Document.objects.get(uid="t-dial-1")
    sentences = list(dialogue.sentences.values_list("index", "turn", "speaker", "text"))
    assert sentences[0] == (0, 0, "USER", "I need a table for two at <TIME_1> on <DAY_1>.")
    assert sentences[1] == (1, 1, "SYSTEM", "Booked at <PLACE_1>.")
    assert sentences[3] == (3, 1, "SYSTEM", "Call <PHONENUMBER_1> if plans change.")
    assert sentences[-1][1:3] == (2, "USER")
    human = dialogue.keyfacts.get()
    assert (human.origin, human.status) == ("human", "accepted")


def test_it_stores_text_exactly_as_given():
    import_file(SMALL_JSONL)
    original = {(row["uid"], row["model"]): row for row in rows()}
    for summary in Summary.objects.select_related("document"):
        row = original[(summary.document.uid, summary.model)]
        assert summary.text == row["summary"]
        assert summary.document.text == row["document"]


def test_it_keeps_given_summary_sentences():
    import_file(SMALL_JSONL)
    summary = Summary.objects.get(document__uid="t-dial-1", model="m-good")
    assert list(summary.sentences.values_list("text", flat=True)) == [
        "The user booked a table for two at <TIME_1> on <DAY_1>."
    ]


def test_csv_and_jsonl_give_the_same_data():
    import_file(SMALL_JSONL, "from-jsonl")
    import_file(SMALL_CSV, "from-csv")

    def snapshot(slug):
        return sorted(
            (s.document.uid, s.model, s.text, s.document.text, tuple(s.sentences.values_list("text", flat=True)))
            for s in Summary.objects.filter(document__project__slug=slug).select_related("document")
        )

    assert snapshot("from-jsonl") == snapshot("from-csv")


def test_reimporting_the_same_file_changes_nothing():
    import_file(SMALL_JSONL)
    before = counts()
    ids = list(SummarySentence.objects.order_by("pk").values_list("pk", "index", "text"))
    import_file(SMALL_JSONL)
    import_file(SMALL_CSV)
    assert counts() == before
    assert list(SummarySentence.objects.order_by("pk").values_list("pk", "index", "text")) == ids


def test_a_reimport_may_add_new_summaries_to_stored_documents(tmp_path):
    import_file(SMALL_JSONL)
    extra = dict(rows()[0], model="m-new", summary="A third summary.")
    import_file(write_jsonl(tmp_path / "more.jsonl", [*rows(), extra]))
    assert Summary.objects.filter(document__uid="t-news-1").count() == 3


def test_a_conflicting_reimport_is_an_error_and_writes_nothing(tmp_path):
    import_file(SMALL_JSONL)
    before = counts()
    changed = rows()
    for row in changed:
        if row["uid"] == "t-news-1":
            row["document"] = row["document"].replace("7-2", "6-3")
    changed.append(dict(changed[0], model="m-new", summary="New one."))
    errors = import_errors(write_jsonl(tmp_path / "changed.jsonl", changed))
    assert "line 1, field 'document': conflicts with the stored document 't-news-1'" in errors[0]
    assert counts() == before
    assert not Summary.objects.filter(model="m-new").exists()


def test_a_changed_summary_text_conflicts(tmp_path):
    import_file(SMALL_JSONL)
    changed = rows()
    changed[1]["summary"] = "Something else."
    errors = import_errors(write_jsonl(tmp_path / "changed.jsonl", changed))
    assert errors == ["line 2, field 'summary': conflicts with the stored summary of 't-news-1' by 'm-bad'"]


def test_a_bad_last_row_rolls_back_everything(tmp_path):
    items = rows()
    items[-1]["input_type"] = "monologue"
    path = write_jsonl(tmp_path / "bad-last.jsonl", items)
    with pytest.raises(CommandError, match="nothing imported: 1 problem"):
        import_file(path, "rollback")
    assert counts() == (0, 0, 0, 0, 0)
    assert not Project.objects.filter(slug="rollback").exists()


def test_every_bad_row_is_reported_with_line_and_field(tmp_path):
    items = rows()
    del items[0]["domain"]
    items[1]["model"] = 42
    items[2]["summary"] = "   "
    items[3]["pred_keyfact"] = "not a list"
    errors = import_errors(write_jsonl(tmp_path / "bad.jsonl", items))
    assert errors == [
        "line 1, field 'domain': missing required field",
        "line 2, field 'model': must be a string, got int",
        "line 3, field 'summary': must not be empty",
        "line 4, field 'pred_keyfact': must be a list of non-empty strings",
    ]
    assert counts() == (0, 0, 0, 0, 0)


def test_invalid_utf8_is_reported_with_its_line(tmp_path):
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(SMALL_JSONL.read_bytes() + '{"uid": "caf\xe9"}\n'.encode("latin-1"))
    errors = import_errors(path)
    assert len(errors) == 1 and errors[0].startswith("line 5: invalid UTF-8 at byte")


@pytest.mark.parametrize("content", [b"", b"\n\n   \n"])
def test_an_empty_file_is_reported(tmp_path, content):
    path = tmp_path / "empty.jsonl"
    path.write_bytes(content)
    assert import_errors(path) == ["file: the file is empty"]


def test_broken_json_lines_are_reported(tmp_path):
    path = tmp_path / "broken.jsonl"
    path.write_text(SMALL_JSONL.read_text() + '{"uid": "x", \n[1, 2]\n')
    assert import_errors(path) == [
        "line 5: not valid JSON (Expecting property name enclosed in double quotes at column 14)",
        "line 6: expected a JSON object, got list",
    ]


def test_rows_are_separated_by_line_feeds_alone(tmp_path):
    """JSON Lines: a row may end in "\r\n", and a JSON string may hold a line or paragraph separator as it is."""
    items = rows()
    items[0]["summary"] = "A council voted\u2028to rebuild the pier.\u0085It costs 4.2 million dollars."
    path = tmp_path / "separators.jsonl"
    path.write_bytes("".join(json.dumps(item, ensure_ascii=False) + "\r\n" for item in items).encode("utf-8"))
    import_file(path)
    summary = Summary.objects.get(document__uid=items[0]["uid"], model=items[0]["model"])
    assert summary.text == items[0]["summary"]
    assert counts()[2] == len(items)


def test_oversized_texts_are_refused(tmp_path, settings):
    settings.FINEGRAIN_MAX_TEXT_CHARS = 100
    errors = import_errors(SMALL_JSONL)
    assert errors[0] == ("line 1, field 'document': is 156 characters; this site's limit is 100 (its operators can "
                         "raise it)")
    assert len(errors) == 4


def test_duplicate_rows_are_refused(tmp_path):
    items = rows()
    errors = import_errors(write_jsonl(tmp_path / "dup.jsonl", [*items, items[1]]))
    assert errors == ["line 5, field 'model': duplicate row: uid 't-news-1' and model 'm-bad' already appear on line 2"]


def test_rows_of_one_document_must_agree(tmp_path):
    items = rows()
    items[1]["domain"] = "sports"
    errors = import_errors(write_jsonl(tmp_path / "disagree.jsonl", items))
    assert errors == ["line 2, field 'domain': differs from line 1 for the same uid 't-news-1'"]


def test_unknown_fields_and_bad_choices_are_refused(tmp_path):
    items = rows()
    items[0]["colour"] = "blue"
    items[1]["length"] = "medium"
    errors = import_errors(write_jsonl(tmp_path / "unknown.jsonl", items))
    assert errors == [
        "line 1, field 'colour': unknown field(s): colour",
        "line 2, field 'length': must be one of long, short (or left out)",
    ]


def test_csv_problems_are_reported(tmp_path):
    path = tmp_path / "bad.csv"
    text = SMALL_CSV.read_text()
    path.write_text(text.replace('[""The council voted 7-2.""', "[not json", 1))
    errors = import_errors(path)
    assert len(errors) == 1 and errors[0].endswith("field 'pred_keyfact': must be a JSON array of strings, e.g. [\"a\", \"b\"]")
    header_only = tmp_path / "header.csv"
    header_only.write_text("uid,doc_id,summary\nu,d,s\n")
    assert import_errors(header_only) == [
        "line 1: the header lacks required column(s): source, domain, input_type, model, document"
    ]


def test_the_command_refuses_missing_files_and_bad_slugs(tmp_path):
    with pytest.raises(CommandError, match="no such file"):
        import_file(tmp_path / "nope.jsonl")
    with pytest.raises(CommandError, match="must be a slug"):
        import_file(SMALL_JSONL, "Not A Slug")


def test_an_unknown_extension_is_refused(tmp_path):
    path = tmp_path / "data.txt"
    path.write_bytes(SMALL_JSONL.read_bytes())
    assert import_errors(path) == ["file: cannot tell the format of 'data.txt': use a .jsonl or .csv file"]


# --- Text the database cannot store, values longer than their column, JSON nested too deeply. SQLite accepts the
# first two and PostgreSQL refuses them at the write; the import must refuse them up front, the same on both.

def test_nul_characters_and_lone_surrogates_are_refused_with_line_and_field(tmp_path):
    items = rows()
    items[0]["summary"] = "The council\x00 voted."
    items[1]["uid"] = "t-news-1\ud800"
    items[2]["pred_keyfact"] = ["A fine key-fact.", "A key-fact with \x00 in it."]
    items[3]["reference\udc00"] = "x"
    path = tmp_path / "unstorable.jsonl"
    # ensure_ascii: the surrogates travel as "\ud800" escapes, the way a broken exporter writes them.
    path.write_text("".join(json.dumps(item) + "\n" for item in items), encoding="utf-8")
    errors = import_errors(path)
    assert errors == [
        "line 1, field 'summary': contains a NUL character (\\x00) at character 12, which cannot be stored; "
        "remove it",
        "line 2, field 'uid': contains a lone surrogate (U+D800) at character 9, which is not valid Unicode; "
        "check the escapes (\\uD800 to \\uDFFF come in pairs)",
        "line 3, field 'pred_keyfact': item 2 contains a NUL character (\\x00) at character 17, which cannot be "
        "stored; remove it",
        "line 4: a field name contains a lone surrogate (U+DC00) at character 10, which is not valid Unicode; "
        "check the escapes (\\uD800 to \\uDFFF come in pairs)",
    ]
    assert all(error.encode("utf-8") for error in errors)  # a page or a terminal can show every message
    assert counts() == (0, 0, 0, 0, 0)


def test_a_nul_character_in_a_csv_cell_is_refused(tmp_path):
    path = tmp_path / "nul.csv"
    path.write_text(SMALL_CSV.read_text().replace(",news,", ",ne\x00ws,", 1), encoding="utf-8")
    errors = import_errors(path)
    assert len(errors) == 1 and errors[0].startswith("line 2, field 'domain': contains a NUL character")
    assert counts() == (0, 0, 0, 0, 0)


@pytest.mark.parametrize(("name", "model", "column"), [
    ("uid", Document, "uid"), ("doc_id", Document, "doc_id"), ("source", Document, "source"),
    ("domain", Document, "domain"), ("redact_type", Document, "redact_type"), ("model", Summary, "model"),
])
def test_values_longer_than_their_column_are_refused_and_the_longest_that_fits_is_stored(
        tmp_path, name, model, column):
    limit = model._meta.get_field(column).max_length
    items = rows()[:1]
    items[0][name] = "x" * (limit + 1)
    errors = import_errors(write_jsonl(tmp_path / "long.jsonl", items))
    assert errors == [f"line 1, field '{name}': is {limit + 1:,} characters; the limit is {limit:,}"]
    assert counts() == (0, 0, 0, 0, 0)
    items[0][name] = "x" * limit
    project = Project.objects.get(slug="alpha")
    import_dataset(project=project, data=write_jsonl(tmp_path / "fits.jsonl", items).read_bytes(),
                   filename="fits.jsonl")
    assert model.objects.filter(**{column: "x" * limit}).count() == 1


def test_json_nested_a_hundred_thousand_levels_deep_is_refused(tmp_path):
    deep = "[" * 100_000 + "]" * 100_000
    path = tmp_path / "deep.jsonl"
    path.write_text(SMALL_JSONL.read_text() + '{"uid": ' + deep + "}\n" + deep + "\n", encoding="utf-8")
    assert import_errors(path) == [
        "line 5: not valid JSON: nested too deeply (a row is one JSON object of strings and lists of strings)",
        "line 6: not valid JSON: nested too deeply (a row is one JSON object of strings and lists of strings)",
    ]
    csv_path = tmp_path / "deep.csv"  # 50,000 levels: a CSV cell holds at most 131,072 characters
    csv_path.write_text(SMALL_CSV.read_text().replace('"[""The council voted 7-2.""', '"' + deep[50_000:-50_000], 1))
    errors = import_errors(csv_path)
    assert len(errors) == 1 and errors[0].endswith("field 'pred_keyfact': must be a JSON array of strings, "
                                                   'e.g. ["a", "b"]')
    assert counts() == (0, 0, 0, 0, 0)


def test_splitting_in_worker_processes_stores_the_same_sentences_as_in_one(project, settings, monkeypatch):
    from corpus import segmentation

    def stored(slug: str, processes: int) -> list:
        settings.FINEGRAIN_SEGMENT_PROCESSES = processes
        target = Project.objects.create(slug=slug, name=slug)
        import_dataset(project=target, data=SMALL_JSONL.read_bytes(), filename=SMALL_JSONL.name)
        return [list(DocumentSentence.objects.filter(document__project=target)
                     .order_by("document__uid", "index").values_list("document__uid", "index", "text", "turn",
                                                                     "speaker")),
                list(SummarySentence.objects.filter(summary__document__project=target)
                     .order_by("summary__document__uid", "summary__model", "index")
                     .values_list("summary__document__uid", "summary__model", "index", "text"))]

    monkeypatch.setattr(segmentation, "PARALLEL_FROM_CHARS", 0)  # The small file goes to the workers too.
    used = []
    real_pool = segmentation.ProcessPoolExecutor
    monkeypatch.setattr(segmentation, "ProcessPoolExecutor", lambda **kw: used.append(kw) or real_pool(**kw))
    alone = stored("alone", 1)
    assert not used
    spread = stored("spread", 2)
    assert used and used[0]["max_workers"] == 2
    assert spread == alone and alone[0] and alone[1]


def test_an_addition_to_a_project_splits_only_its_new_texts_in_the_workers(settings, monkeypatch):
    import multiprocessing

    from corpus import segmentation

    def sentences(target: Project) -> list:
        return list(SummarySentence.objects.filter(summary__document__project=target).order_by(
            "summary__document__uid", "summary__model", "index").values_list(
            "summary__document__uid", "summary__model", "index", "text"))

    monkeypatch.setattr(segmentation, "PARALLEL_FROM_CHARS", 0)
    offered = []
    real_offer = segmentation.Splitter.offer
    monkeypatch.setattr(segmentation.Splitter, "offer",
                        lambda splitter, kind, text: offered.append(text) or real_offer(splitter, kind, text))
    items = rows()
    data = "\n".join(map(json.dumps, items)).encode()
    settings.FINEGRAIN_SEGMENT_PROCESSES = 2
    added = Project.objects.create(slug="added", name="added")
    import_dataset(project=added, data="\n".join(map(json.dumps, items[:2])).encode(), filename="first.jsonl")
    offered.clear()
    import_dataset(project=added, data=data, filename="all.jsonl")  # the first two rows are stored already
    assert offered and not {row["summary"] for row in items[:2]} & set(offered)
    settings.FINEGRAIN_SEGMENT_PROCESSES = 1
    single = Project.objects.create(slug="single", name="single")
    import_dataset(project=single, data=data, filename="all.jsonl")
    assert sentences(added) == sentences(single) and sentences(single)
    assert not multiprocessing.active_children()


def test_a_file_with_errors_split_early_in_the_workers_writes_nothing_and_leaves_no_worker(settings, monkeypatch):
    import multiprocessing

    from corpus import segmentation

    monkeypatch.setattr(segmentation, "PARALLEL_FROM_CHARS", 0)
    settings.FINEGRAIN_SEGMENT_PROCESSES = 2
    items = rows()
    items[-1]["model"] = ""
    project = Project.objects.create(slug="broken", name="broken")
    with pytest.raises(DatasetError):
        import_dataset(project=project, data="\n".join(map(json.dumps, items)).encode(), filename="broken.jsonl")
    assert counts() == (0, 0, 0, 0, 0)
    assert not multiprocessing.active_children()


def test_the_cycle_collector_is_off_while_importing_and_back_on_after_it_even_after_an_error():
    import gc

    project = Project.objects.create(slug="gc", name="gc")
    data = "\n".join(json.dumps(row) for row in rows()).encode()
    states = []
    import_dataset(project=project, data=data, filename="rows.jsonl", planned=lambda _: states.append(gc.isenabled()),
                   progress=lambda _: states.append(gc.isenabled()))
    assert states and not any(states)
    assert gc.isenabled()
    with pytest.raises(DatasetError):
        import_dataset(project=project, data=b'{"doc_id": 1}', filename="bad.jsonl")
    assert gc.isenabled()
    gc.disable()
    try:  # a caller that had it off keeps it off
        import_dataset(project=project, data=data, filename="rows.jsonl")
        assert not gc.isenabled()
    finally:
        gc.enable()
