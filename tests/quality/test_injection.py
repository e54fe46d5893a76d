"""Attention checks injected into HITs as they are built (paper 3.4, G.3)."""

import re
from collections import Counter

import pytest
from django.db.models import F

from annotation.models import AttentionCheck, Hit, Task, Unit
from annotation.quality.injection import checks_for, seeded
from annotation.services.assignment import reserve_next_hit
from annotation.services.hits import build_hits
from corpus.models import Project
from tests.quality.conftest import with_checks
from tests.work import add_assistance, crowd_annotator, import_small

pytestmark = pytest.mark.django_db
Kind = AttentionCheck.Kind


def test_it_makes_about_the_set_share_of_units_checks_with_at_least_one_per_hit(big_project):
    hits = Hit.objects.filter(project=big_project, task="fv")
    assert hits.count() == 18
    for hit in hits:
        assert hit.units.filter(attention_check__isnull=False).count() >= 1
    units = Unit.objects.filter(hit__in=hits)
    share = units.filter(attention_check__isnull=False).count() / units.count()
    assert 0.18 <= share <= 0.30


def test_the_check_count_is_rounded_at_random_around_the_rate():
    counts = [checks_for(0.2, 10, seeded("hit", n)) for n in range(400)]
    assert set(counts) == {2, 3}  # 0.25 * 10 = 2.5, rounded at random.
    assert 0.4 < counts.count(3) / len(counts) < 0.6
    assert checks_for(0.2, 8, seeded("x")) == checks_for(0.2, 8, seeded("x"))
    assert checks_for(0.0, 8, seeded("x")) == 0 and checks_for(0.2, 1, seeded("x")) == 1


def test_fv_checks_show_the_offline_labelers_own_judgment_and_half_of_them_a_wrong_one(big_project):
    checks = list(AttentionCheck.objects.filter(unit__hit__project=big_project, unit__task="fv")
                  .select_related("unit__hit__document", "origin_document"))
    # With the offline labeler a check shows the labeler's own judgment of its sentence. It flags every foreign
    # sentence of this corpus, so the checks where the AI must be contradicted exchange a name instead; half are
    # meant to, but the labeler's name probes catch some swaps, and a document whose every tried swap is caught
    # gives an "AI says error" check instead (NAME_SWAP_TRIES): at least a quarter, never none.
    kinds = Counter(check.kind for check in checks)
    assert set(kinds) == {Kind.FV_AI_SAYS_ERROR, Kind.FV_NAME_SWAPPED}
    assert kinds[Kind.FV_NAME_SWAPPED] >= len(checks) / 4
    for check in checks:
        unit = check.unit
        assert unit.summary_sentence_id is None and unit.keyfact_id is None
        if check.kind == Kind.FV_NAME_SWAPPED:
            document = unit.hit.document
            assert check.origin_document == document and unit.text not in document.text
            wrong, right = re.fullmatch(r"names (.+) where the document has (.+)", check.note).groups()
            assert unit.text.replace(wrong, right, 1) in document.text and wrong in document.text
            assert unit.ai_category == "no_error" and check.expected == {"has_error": True, "ai_right": False}
            continue
        assert check.origin_document.domain != unit.hit.document.domain
        if check.kind == Kind.FV_AI_SAYS_CORRECT:
            assert unit.ai_category == "no_error" and check.expected == {"has_error": True, "ai_right": False}
        else:
            assert unit.ai_category != "no_error" and check.expected == {"has_error": True, "ai_right": True}
        assert unit.ai_reason.startswith("Offline labeler (not an LLM): ")
        real = unit.hit.units.filter(attention_check__isnull=True).first()
        assert unit.ai_source == real.ai_source
        assert len(unit.highlighted) == len(real.highlighted)


def test_positions_stay_contiguous_and_checks_are_not_appended_at_the_end(big_project):
    places = Counter()
    for hit in Hit.objects.filter(project=big_project, task="fv"):
        units = list(hit.units.order_by("position").select_related("attention_check"))
        assert [u.position for u in units] == list(range(len(units)))
        real = [u.summary_sentence.index for u in units if u.summary_sentence_id]
        assert real == sorted(real)  # The summary's own sentences keep their order.
        for unit in units:
            if hasattr(unit, "attention_check"):
                places[unit.position] += 1
                places["last" if unit.position == len(units) - 1 else "inside"] += 1
    # Places are seeded by each HIT's random public id, so how many checks land last varies from build to build (in
    # small HITs as many land last as inside in some builds); that some land inside, at several places, does not.
    assert places["inside"] >= 1
    assert len([place for place in places if isinstance(place, int)]) >= 3


def test_building_again_changes_nothing_and_held_hits_are_never_touched(big_project):
    before = list(Unit.objects.order_by("pk").values_list("pk", "hit_id", "position", "text", "highlighted"))
    for task in Task.values:
        assert build_hits(big_project, task).units_created == 0
    assert list(Unit.objects.order_by("pk").values_list("pk", "hit_id", "position", "text", "highlighted")) == before


def test_checks_are_deterministic_per_hit(big_project):
    def shape(hit):
        return [(u.position, u.summary_sentence.index if u.summary_sentence_id else None, u.text,
                 getattr(getattr(u, "attention_check", None), "kind", None))
                for u in hit.units.order_by("position").select_related("attention_check", "summary_sentence")]

    hit = Hit.objects.filter(project=big_project, task="fv").order_by("position").first()
    before = shape(hit)
    # Take the checks out and put the summary's sentences back in order: building again gives the same HIT.
    Unit.objects.filter(hit=hit, attention_check__isnull=False).delete()
    Unit.objects.filter(hit=hit).update(position=F("position") + 1000)
    for n, unit in enumerate(hit.units.order_by("summary_sentence__index")):
        Unit.objects.filter(pk=unit.pk).update(position=n)
    build_hits(big_project, "fv")
    assert shape(hit) == before


def test_kv_checks_are_key_facts_of_another_document(checked_project):
    check = AttentionCheck.objects.get(unit__hit__project=checked_project, unit__task="kv")
    assert check.kind == Kind.KV_IRRELEVANT and check.expected == {"useful": False}
    assert check.origin_document != check.unit.hit.document
    assert check.unit.text in set(check.origin_document.keyfacts.values_list("text", flat=True))


def test_ka_checks_are_whole_rows_and_columns(db):
    project = import_small(Project.objects.create(slug="ka", name="KA"))
    add_assistance(project)
    with_checks(project, 0.5)
    build_hits(project, "fv")
    build_hits(project, "ka")
    kinds = set()
    for hit in Hit.objects.filter(project=project, task="ka"):
        units = list(hit.units.select_related("attention_check", "keyfact"))
        rows, columns = max(u.row for u in units) + 1, max(u.column for u in units) + 1
        assert sorted((u.row, u.column) for u in units) == [(r, c) for r in range(rows) for c in range(columns)]
        assert all(u.position == u.row * columns + u.column for u in units)
        for unit in units:
            check = getattr(unit, "attention_check", None)
            if check is None:
                continue
            kinds.add(check.kind)
            assert unit.keyfact_id is None and unit.summary_sentence_id is None
            same_row = [u for u in units if u.row == unit.row]
            if check.kind == Kind.KA_FAKE_KEYFACT:
                assert all(getattr(u, "attention_check", None) for u in same_row)
                assert check.expected == {"aligned": False}
            elif check.kind == Kind.KA_UNRELATED_SENTENCE:
                assert check.expected == {"aligned": False}
            else:
                column = [u for u in units if u.column == unit.column and not hasattr(u, "attention_check")
                          or u.column == unit.column and u.attention_check.expected]
                # Exactly one cell of a paraphrase column must be aligned: the paraphrased key-fact's. (Where the
                # column crosses a fake key-fact row, that cell is graded too, as "aligned with nothing".)
                graded = [u for u in units if u.column == unit.column
                          and getattr(u, "attention_check", None) and u.attention_check.expected == {"aligned": True}]
                assert len(graded) == 1
                assert column
            real_in_row = [u for u in same_row if u.keyfact_id]
            if real_in_row:
                assert unit.highlighted == real_in_row[0].highlighted
    assert Kind.KA_FAKE_KEYFACT in kinds or Kind.KA_PARAPHRASE in kinds or Kind.KA_UNRELATED_SENTENCE in kinds


def test_a_paraphrase_column_restates_the_key_fact_it_is_graded_against(db):
    from assist.paraphrase import rule_paraphrase

    project = import_small(Project.objects.create(slug="para", name="Para"))
    add_assistance(project)
    with_checks(project, 0.9)
    build_hits(project, "ka")
    graded = [c for c in AttentionCheck.objects.filter(unit__hit__project=project, kind=Kind.KA_PARAPHRASE)
              if c.expected]
    assert graded
    for check in graded:
        fact = check.unit.text
        variants = {rule_paraphrase(fact, seed=seed) for seed in range(2000)}
        assert check.unit.sentence_text in variants


def test_checks_get_the_assistance_their_neighbours_get_when_it_arrives_later(project):
    with_checks(import_small(project))
    build_hits(project, "fv")
    check_units = Unit.objects.filter(hit__project=project, attention_check__isnull=False)
    assert all(u.highlighted is None and u.ai_category == "" for u in check_units)
    add_assistance(project)
    build_hits(project, "fv")
    for unit in check_units.all():
        real = unit.hit.units.filter(attention_check__isnull=True).first()
        assert len(unit.highlighted) == len(real.highlighted) and unit.ai_source == real.ai_source
        assert unit.ai_category in ("no_error", "out_of_article")


def test_a_hit_somebody_holds_gets_no_checks(project):
    import_small(project)
    build_hits(project, "fv")  # import_small switches checks off.
    annotator = crowd_annotator("early")
    annotator.qualified_at = annotator.created
    annotator.save()
    assignment = reserve_next_hit(annotator, project, "fv", confirmed=True)
    Project.objects.filter(pk=project.pk).update(attention_check_rate=0.2)
    build_hits(Project.objects.get(pk=project.pk), "fv")
    assert not assignment.hit.units.filter(attention_check__isnull=False).exists()
    assert Unit.objects.filter(hit__project=project, attention_check__isnull=False).exists()
