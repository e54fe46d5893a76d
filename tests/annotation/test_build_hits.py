"""build_hits: HITs and units of the three tasks, key-fact validation settled by majority, display snapshots."""

import pytest

from annotation.models import AttentionCheck, Hit, Task, Unit
from annotation.services.hits import build_hits, settle_keyfact_validation
from assist.models import ContextualMapping, PreLabel
from corpus.models import KeyFact, Project
from tests.work import add_assistance, build_all, crowd_annotator, import_small, work_through

pytestmark = pytest.mark.django_db


def test_it_builds_one_fv_hit_per_summary_with_one_unit_per_sentence(project):
    import_small(project)
    result = build_hits(project, "fv")
    assert (result.hits_created, result.units_created) == (4, 6)
    hit = Hit.objects.get(task="fv", summary__model="m-good", document__uid="t-news-1")
    assert [(u.position, u.text) for u in hit.units.all()] == [
        (0, "The council voted 7-2 to rebuild the pier."), (1, "It costs 4.2 million dollars.")]
    assert all(u.summary_sentence.text == u.text for u in hit.units.all())
    # Positions give the order HITs are handed out in, document by document.
    assert sorted(Hit.objects.filter(task="fv").values_list("position", flat=True)) == [0, 1, 2, 3]


def test_it_is_idempotent(project):
    import_small(project)
    build_all(project)
    counts = (Hit.objects.count(), Unit.objects.count())
    for task in Task.values:
        result = build_hits(project, task)
        assert (result.hits_created, result.units_created) == (0, 0)
    assert (Hit.objects.count(), Unit.objects.count()) == counts


def test_it_builds_kv_hits_for_candidates_and_skips_imported_human_keyfacts(project):
    import_small(project)
    result = build_hits(project, "kv")
    assert (result.hits_created, result.units_created) == (1, 2)
    hit = Hit.objects.get(task="kv")
    assert hit.document.uid == "t-news-1" and hit.summary is None
    assert [u.text for u in hit.units.all()] == ["The council voted 7-2.", "The pier will be rebuilt."]


def test_it_builds_ka_only_for_documents_whose_kv_is_complete(project):
    import_small(project)
    build_hits(project, "kv")
    result = build_hits(project, "ka")
    # t-dial-1 has imported human key-facts: no validation needed. t-news-1 waits for its KV labels.
    assert {h.document.uid for h in Hit.objects.filter(task="ka")} == {"t-dial-1"}
    assert result.hits_created == 2
    hit = Hit.objects.get(task="ka", summary__model="m-good")
    unit = hit.units.get()
    assert (unit.row, unit.column, unit.text, unit.sentence_text) == (
        0, 0, "A table for two is booked.", "The user booked a table for two at <TIME_1> on <DAY_1>.")


def test_the_last_kv_submission_settles_keyfacts_and_creates_the_ka_hits(project):
    import_small(project)
    build_all(project)
    annotators = [crowd_annotator(f"w{i}") for i in range(3)]
    work_through(annotators[0], project, "kv", yes=True)
    work_through(annotators[1], project, "kv", yes=False)
    assert not Hit.objects.filter(task="ka", document__uid="t-news-1").exists()
    assert set(KeyFact.objects.filter(document__uid="t-news-1").values_list("status", flat=True)) == {"candidate"}
    work_through(annotators[2], project, "kv", yes=True)
    # 2 of 3 said useful: both candidates become human key-facts; one KA HIT per summary, 2 facts x sentences.
    assert set(KeyFact.objects.filter(document__uid="t-news-1").values_list("status", flat=True)) == {"accepted"}
    ka = Hit.objects.filter(task="ka", document__uid="t-news-1")
    assert ka.count() == 2
    assert sorted(ka.values_list("summary__model", flat=True)) == ["m-bad", "m-good"]
    good = ka.get(summary__model="m-good")
    assert [(u.row, u.column) for u in good.units.all()] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert build_hits(project, "ka").hits_created == 0


def test_a_tie_rejects_the_keyfact(project):
    project.annotators_per_unit = 2
    project.save()
    import_small(project)
    build_all(project)
    work_through(crowd_annotator("a"), project, "kv", yes=True)
    work_through(crowd_annotator("b"), project, "kv", yes=False)
    assert set(KeyFact.objects.filter(document__uid="t-news-1").values_list("status", flat=True)) == {"rejected"}
    # Nothing accepted: nothing to align.
    assert not Hit.objects.filter(task="ka", document__uid="t-news-1").exists()
    assert settle_keyfact_validation(Hit.objects.get(task="kv").document) == {"accepted": 0, "rejected": 2}


def test_it_snapshots_highlights_and_the_latest_ok_prelabel_of_the_configured_backend(project, settings):
    settings.FINEGRAIN_LLM_BACKEND = "offline"
    import_small(project)
    add_assistance(project)
    target = project.documents.get(uid="t-news-1").summaries.get(model="m-bad").sentences.get()
    PreLabel.objects.create(summary_sentence=target, status="failed", backend="offline-similarity", model="x",
                            prompt_version="newer", error="boom")
    PreLabel.objects.create(summary_sentence=target, status="ok", backend="openai", model="gpt", prompt_version="v",
                            category="entity", reason="Another backend.")
    build_hits(project, "fv")
    unit = Unit.objects.get(summary_sentence=target)
    assert unit.highlighted == [1]
    assert unit.ai_category == "relation"
    assert unit.ai_reason == "The source says the pier is rebuilt, not demolished."
    assert unit.ai_source == "Offline labeler (sentence similarity and rules, not an LLM)"
    settings.FINEGRAIN_LLM_BACKEND = "openai"
    build_hits(project, "fv")
    unit.refresh_from_db()
    assert (unit.ai_category, unit.ai_source) == ("entity", "openai · gpt")


def test_assistance_computed_later_fills_units_nobody_has_labeled(project):
    import_small(project)
    build_all(project)
    assert set(Unit.objects.values_list("highlighted", flat=True)) == {None}
    labeled = work_through(crowd_annotator("early"), project, "fv").hit
    add_assistance(project)
    result = build_hits(project, "fv")
    assert result.hits_created == 0
    assert result.units_refreshed == Unit.objects.filter(task="fv").exclude(hit=labeled).count() == 4
    # What the first annotator saw stays recorded as it was.
    assert set(labeled.units.values_list("highlighted", flat=True)) == {None}
    assert set(Unit.objects.filter(task="fv").exclude(hit=labeled).values_list("ai_category", flat=True)) >= {
        "no_error", "relation"}
    assert build_hits(project, "kv").units_refreshed == 2
    assert ContextualMapping.objects.filter(keyfact__isnull=False).count() == 3


def test_it_refuses_an_unknown_task(project):
    with pytest.raises(ValueError, match="Unknown task 'xx'"):
        build_hits(project, "xx")


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("task", ["fv", "kv"])
def test_managers_building_the_same_hits_at_once_build_them_once_without_an_error(task):
    # On PostgreSQL the second build used to reach the unique constraints after the first committed: IntegrityError.
    from corpus.models import Project
    from tests.work import import_generated, race

    project = import_generated(Project.objects.create(slug="builders", name="Builders"), documents=20,
                               summarizers=4)
    results = race(lambda _: build_hits(project, task), range(3))
    created = sorted(result.hits_created for result in results)
    expected = 80 if task == "fv" else 20
    assert created == [0, 0, expected]
    assert Hit.objects.filter(project=project, task=task).count() == expected
    per_hit = 3 if task == "fv" else 2
    assert Unit.objects.filter(hit__project=project, task=task).count() == expected * per_hit
    assert sorted(Hit.objects.filter(project=project, task=task).values_list("position", flat=True)) == \
        list(range(expected))


def test_highlights_are_snapshotted_strongest_first(project):
    from assist.models import ContextualMapping

    import_small(project)
    add_assistance(project)
    sentence = project.documents.get(uid="t-news-1").summaries.get(model="m-bad").sentences.get()
    ContextualMapping.objects.filter(summary_sentence=sentence).update(ranked=[3, 0, 2, 1], highlighted=[0, 3])
    build_hits(project, "fv")
    assert Unit.objects.get(summary_sentence=sentence).highlighted == [3, 0]


@pytest.mark.parametrize("task", ["kv", "fv", "ka"])
def test_building_with_checks_makes_as_many_queries_for_many_documents_as_for_few(task):
    """No statement per HIT or per document: what made building a UniSumEval-size project take minutes."""
    import numpy as np
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from exports.simulate import SimulationResult, _simulate_task, simulated_annotators
    from tests.work import import_generated

    def statements(documents: int) -> int:
        project = import_generated(Project.objects.create(slug=f"docs-{documents}", name="p"), documents=documents,
                                   names=True)
        project.attention_check_rate = 0.2
        project.save(update_fields=["attention_check_rate"])
        if task == "ka":  # KA HITs wait for the key-facts' validation to settle.
            build_hits(project, "kv")
            _simulate_task(project, "kv", simulated_annotators(project, 3), 1.0, np.random.default_rng(1),
                           SimulationResult(annotators=[]))
        with CaptureQueriesContext(connection) as captured:
            result = build_hits(project, task)
        assert result.hits_created == documents * (1 if task == "kv" else 4)
        assert AttentionCheck.objects.filter(unit__hit__project=project, unit__task=task).exists()
        # Inserts come in batches sized by the database's limit on parameters (999 on SQLite): they may grow. The
        # planner statistics' refresh analyzes the tables that are stale, which depends on the builds before.
        return len([query for query in captured.captured_queries
                    if not query["sql"].startswith(("INSERT", "ANALYZE"))])

    assert statements(9) == statements(3)


def test_the_cycle_collector_is_off_while_building_and_back_on_after(project, monkeypatch):
    import gc

    from annotation.services import hits as hit_service

    import_small(project)
    seen = []
    build_fv = hit_service._build_fv

    def watched(*args):
        seen.append(gc.isenabled())
        return build_fv(*args)

    monkeypatch.setattr(hit_service, "_build_fv", watched)
    assert build_hits(project, Task.FACT_VERIFICATION).hits_created > 0
    assert seen == [False] and gc.isenabled()
