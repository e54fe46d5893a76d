"""Writing many rows at once (corpus/bulk.py): every value lands in its own row and column, on SQLite and
PostgreSQL, including NULLs, JSON, foreign keys and batches larger than one statement's parameters."""

import pytest
from django.db import IntegrityError, transaction

from corpus import bulk
from corpus.models import Document, KeyFact, Summary, SummarySentence

pytestmark = pytest.mark.django_db


@pytest.fixture
def document(project):
    return Document.objects.create(project=project, uid="d1", doc_id="d1", source="s", domain="news",
                                   input_type="non-dialogue", text="One. Two.", word_count=2)


def test_it_inserts_rows_with_their_values_and_nulls(document):
    summary = Summary.objects.create(document=document, model="m", text="One. Two.")
    assert bulk.insert_rows(SummarySentence, ["summary", "index", "text"],
                            [(summary.pk, 0, "One."), (summary.pk, 1, "Two, it's 'quoted' \"twice\".")]) == 2
    assert list(SummarySentence.objects.order_by("index").values_list("summary_id", "index", "text")) == [
        (summary.pk, 0, "One."), (summary.pk, 1, "Two, it's 'quoted' \"twice\".")]
    assert bulk.insert_rows(SummarySentence, ["summary", "index", "text"], []) == 0


def test_it_keeps_the_characters_a_bulk_format_could_take_for_separators(document):
    summary = Summary.objects.create(document=document, model="m", text="x")
    texts = ["tab\there", "line\nbreak\r\n", "back\\slash \\N", "\\.", "", "é ✓ 𝔘 <PLACE_1>"]
    bulk.insert_rows(SummarySentence, ["summary", "index", "text"],
                     [(summary.pk, index, text) for index, text in enumerate(texts)])
    assert list(SummarySentence.objects.order_by("index").values_list("text", flat=True)) == texts


def test_a_row_that_breaks_a_constraint_raises_integrity_error_and_writes_nothing(document):
    summary = Summary.objects.create(document=document, model="m", text="x")
    SummarySentence.objects.create(summary=summary, index=1, text="already there")
    with pytest.raises(IntegrityError), transaction.atomic():
        bulk.insert_rows(SummarySentence, ["summary", "index", "text"], [(summary.pk, 0, "new"), (summary.pk, 1, "clash")])
    assert list(SummarySentence.objects.values_list("text", flat=True)) == ["already there"]


def test_it_returns_the_keys_of_every_inserted_row_across_batches(document, monkeypatch):
    monkeypatch.setattr(bulk, "MAX_PARAMETERS", 8)  # 4 columns: 2 rows per statement, so 3 statements here
    rows = [(document.pk, f"model {i}", f"Summary {i}.", f"{i:064x}") for i in range(5)]
    returned = bulk.insert_rows_returning(Summary, ["document", "model", "text", "text_sha256"], rows,
                                          ["id", "document", "model"])
    stored = {(summary.document_id, summary.model): summary for summary in Summary.objects.all()}
    assert sorted(returned) == sorted((stored[(pk, model)].pk, pk, model) for pk, model, _text, _sha in rows)
    assert [(stored[(pk, model)].text, stored[(pk, model)].text_sha256) for pk, model, _t, _s in rows] == [
        (text, sha) for _pk, _model, text, sha in rows]
    assert bulk.insert_rows_returning(Summary, ["document", "model", "text", "text_sha256"], [], ["id"]) == []


def test_it_updates_each_row_with_its_own_values_across_batches(document, monkeypatch):
    monkeypatch.setattr(bulk, "MAX_PARAMETERS", 9)  # 3 columns: 3 rows per statement, so 4 statements here
    facts = KeyFact.objects.bulk_create([KeyFact(document=document, index=i, text=f"fact {i}", origin="imported")
                                         for i in range(10)])
    for fact in facts:
        fact.text, fact.status = f"changed {fact.index}", "accepted" if fact.index % 2 else "rejected"
    untouched = KeyFact.objects.create(document=document, index=99, text="left alone", origin="imported")
    assert bulk.update_rows(facts[:-1], ["text", "status"]) == 9
    stored = dict(KeyFact.objects.values_list("index", "text"))
    assert stored == {**{i: f"changed {i}" for i in range(9)}, 9: "fact 9", 99: "left alone"}
    assert set(KeyFact.objects.filter(index__lt=9, status="accepted").values_list("index", flat=True)) == {1, 3, 5, 7}
    assert KeyFact.objects.get(pk=untouched.pk).status == "candidate"
    assert bulk.update_rows([], ["text"]) == 0


def test_it_writes_json_nulls_and_foreign_keys(project, document):
    from annotation.models import AttentionCheck, Hit, Task, Unit

    other = Document.objects.create(project=project, uid="d2", doc_id="d2", source="s", domain="sport",
                                    input_type="non-dialogue", text="Three.", word_count=1)
    hit = Hit.objects.create(project=project, task=Task.KEYFACT_VALIDATION, document=document, position=0)
    units = Unit.objects.bulk_create([Unit(hit=hit, task=hit.task, position=i, text=f"u{i}", highlighted=[i])
                                      for i in range(3)])
    check = AttentionCheck.objects.create(unit=units[0], kind="kv_irrelevant", expected={"useful": False})
    units[0].highlighted, units[1].highlighted, units[2].highlighted = None, [4, 1], []
    for unit in units:
        unit.row, unit.column = unit.position + 10, None
    bulk.update_rows(units, ["highlighted", "row", "column"])
    assert [(u.highlighted, u.row, u.column) for u in Unit.objects.order_by("position")] == [
        (None, 10, None), ([4, 1], 11, None), ([], 12, None)]
    check.origin_document_id, check.expected, check.note = other.pk, {"useful": False, "why": "n"}, "a note"
    bulk.update_rows([check], ["origin_document", "expected", "note"])
    check.refresh_from_db()
    assert (check.origin_document_id, check.expected, check.note) == (other.pk, {"useful": False, "why": "n"},
                                                                      "a note")


def test_it_inserts_unsaved_objects_with_their_defaults(project, document):
    from annotation.models import Hit, Task, Unit

    hit = Hit.objects.create(project=project, task=Task.KEYFACT_VALIDATION, document=document, position=0)
    units = [Unit(hit=hit, task=hit.task, position=i, text=f"s{i}", highlighted=None if i else [2, 0])
             for i in range(3)]
    assert bulk.insert_objects(units) == 3
    stored = list(Unit.objects.order_by("position").values_list("public_id", "hit_id", "text", "highlighted",
                                                                "ai_category"))
    assert stored == [(unit.public_id, hit.pk, unit.text, unit.highlighted, "") for unit in units]
    assert bulk.insert_objects([]) == 0


def test_values_that_skip_djangos_preparation_are_what_it_would_have_sent(document):
    from django.db import connection

    from corpus.models import DocumentSentence

    columns = [field for model in (DocumentSentence, KeyFact) for field in model._meta.concrete_fields]
    samples = [7, True, None, "text", "", KeyFact.Origin.choices[0][0], KeyFact.Status.values[0],
               KeyFact.Status(KeyFact.Status.values[0]), 3.0, document, "5"]
    for field in columns:
        for value in samples:
            try:
                expected = field.get_db_prep_save(value, connection)
            except (TypeError, ValueError):
                with pytest.raises((TypeError, ValueError)):
                    bulk._prepared([(value,)], [field], connection)
                continue
            [(prepared,)] = bulk._prepared([(value,)], [field], connection)
            assert prepared == expected and str(prepared) == str(expected), (field.name, value)
            # On PostgreSQL Django wraps an integer in psycopg's sized type (Int4); COPY writes the same text.
            if connection.vendor == "sqlite" or not isinstance(expected, int):
                assert type(prepared) is type(expected), (field.name, value)


def test_a_column_is_prepared_whole_when_one_of_its_values_is_not_plain(document):
    from django.db import connection

    from corpus.models import DocumentSentence

    columns = [DocumentSentence._meta.get_field(name) for name in ("document", "index", "text")]
    plain = [(document.pk, 0, "plain"), (document.pk, 1, None)]
    assert bulk._prepared(plain, columns, connection) is plain
    # A bool in an integer column is Django's to turn into 1: the whole column goes through its preparation.
    prepared = bulk._prepared([*plain, (document.pk, True, "x")], columns, connection)
    assert [list(row) for row in prepared] == [[document.pk, 0, "plain"], [document.pk, 1, None],
                                               [document.pk, 1, "x"]]
    assert type(prepared[2][1]) is not bool


def test_the_cycle_collector_pause_restores_what_the_caller_had_even_after_an_error():
    import gc

    assert gc.isenabled()
    with pytest.raises(RuntimeError), bulk.cycle_collection_paused():
        assert not gc.isenabled()
        raise RuntimeError
    assert gc.isenabled()
    gc.disable()
    try:
        with bulk.cycle_collection_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


@pytest.mark.services
def test_stale_planner_statistics_are_refreshed_and_fresh_ones_left_alone(document):
    from django.db import connection

    from corpus.models import DocumentSentence

    def reltuples(model):
        with connection.cursor() as cursor:
            cursor.execute("SELECT reltuples FROM pg_class WHERE relname = %s", [model._meta.db_table])
            return cursor.fetchone()[0]

    with connection.cursor() as cursor:  # as after a bulk load that nothing has analyzed yet
        cursor.execute("DELETE FROM pg_statistic WHERE starelid = %s::regclass", [DocumentSentence._meta.db_table])
        cursor.execute("UPDATE pg_class SET reltuples = -1 WHERE relname = %s", [DocumentSentence._meta.db_table])
    bulk.insert_rows(DocumentSentence, ["document", "index", "text", "turn", "speaker"],
                     [(document.pk, index, f"Sentence {index}.", None, "") for index in range(300)])
    assert reltuples(DocumentSentence) < 0
    assert DocumentSentence._meta.db_table in bulk.refresh_stale_statistics(DocumentSentence, KeyFact)
    assert reltuples(DocumentSentence) == 300
    assert DocumentSentence._meta.db_table not in bulk.refresh_stale_statistics(DocumentSentence)
