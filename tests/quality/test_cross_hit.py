"""A crowd worker never holds two HITs that show the same text: comparing them would show the attention checks as
the lines one has and the other lacks (paper G.3: checks must not be told apart). In-house annotators, a known team
that often must label every HIT, get such HITs last."""

import pytest

from annotation.crowd.claims import ClaimRefused, _reserve_hit
from annotation.models import Annotator, Hit, Task
from annotation.selectors import available_hits
from annotation.services.assignment import reserve_next_hit
from annotation.services.hits import build_hits
from tests.work import annotator_for, complete, crowd_annotator, import_generated, qualify, work_through

pytestmark = pytest.mark.django_db


@pytest.fixture
def aligned(project, django_user_model):
    """Two documents, two summaries each, with their FV, KV and (after a KV majority) KA HITs."""
    import_generated(project, documents=2, summarizers=2)
    for task in (Task.FACT_VERIFICATION, Task.KEYFACT_VALIDATION):
        build_hits(project, task)
    for n in range(project.annotators_per_unit):
        validator = annotator_for(django_user_model.objects.create_user(f"validator{n}"))
        for _ in range(2):
            work_through(validator, project, Task.KEYFACT_VALIDATION)
    assert Hit.objects.filter(project=project, task=Task.KEYFACT_ALIGNMENT).count() == 4
    return project


def ka_hits(**filters) -> set[int]:
    return set(Hit.objects.filter(task=Task.KEYFACT_ALIGNMENT, **filters).values_list("pk", flat=True))


def pks(hits) -> set[int]:
    return {hit.pk for hit in hits}


def test_after_a_summarys_fv_hit_a_crowd_worker_gets_no_ka_hit_of_that_summary_and_vice_versa(aligned):
    worker = crowd_annotator("w1")
    complete(reserve_next_hit(worker, aligned, Task.FACT_VERIFICATION, confirmed=True))
    summary = worker.assignments.get().hit.summary
    assert pks(available_hits(worker, aligned, Task.KEYFACT_ALIGNMENT)) == ka_hits() - ka_hits(summary=summary)

    other = crowd_annotator("w2")
    complete(reserve_next_hit(other, aligned, Task.KEYFACT_ALIGNMENT, confirmed=True))
    summary = other.assignments.get().hit.summary
    fv = Hit.objects.filter(task=Task.FACT_VERIFICATION)
    assert pks(available_hits(other, aligned, Task.FACT_VERIFICATION)) == pks(fv.exclude(summary=summary))


def test_after_a_ka_hit_a_crowd_worker_gets_no_other_ka_hit_nor_the_kv_hit_of_that_document(aligned):
    worker = crowd_annotator("w1")
    complete(reserve_next_hit(worker, aligned, Task.KEYFACT_ALIGNMENT, confirmed=True))
    document = worker.assignments.get().hit.document
    assert pks(available_hits(worker, aligned, Task.KEYFACT_ALIGNMENT)) == ka_hits() - ka_hits(document=document)
    aligned.annotators_per_unit += 1  # A place on every KV HIT again.
    aligned.save(update_fields=["annotators_per_unit"])
    kv = Hit.objects.filter(task=Task.KEYFACT_VALIDATION)
    assert pks(available_hits(worker, aligned, Task.KEYFACT_VALIDATION)) == pks(kv.exclude(document=document))
    assert len(pks(available_hits(crowd_annotator("w2"), aligned, Task.KEYFACT_VALIDATION))) == 2


def test_an_in_house_annotator_gets_overlapping_hits_only_when_nothing_else_is_left(aligned, django_user_model):
    person = annotator_for(django_user_model.objects.create_user("inhouse"))
    verified = reserve_next_hit(person, aligned, Task.FACT_VERIFICATION, confirmed=True)
    complete(verified)
    taken = []
    while (assignment := reserve_next_hit(person, aligned, Task.KEYFACT_ALIGNMENT, confirmed=True)) is not None:
        taken.append(assignment.hit)
        complete(assignment)
    # All four KA HITs: first one of each document, never the verified summary's; then the two that overlap.
    assert len(taken) == 4
    assert {hit.document for hit in taken[:2]} == set(verified.hit.project.documents.all())
    assert verified.hit.summary in {hit.summary for hit in taken[2:]}


def test_an_mturk_worker_arriving_on_an_overlapping_hit_is_refused_with_a_reason(aligned):
    worker = qualify(Annotator.objects.create(provider=Annotator.Provider.MTURK, external_id="A1B2C3D4E5"), aligned)
    complete(reserve_next_hit(worker, aligned, Task.FACT_VERIFICATION, confirmed=True))
    summary = worker.assignments.get().hit.summary
    with pytest.raises(ClaimRefused, match="worked on this summary or its key-facts in another HIT"):
        _reserve_hit(Hit.objects.get(task=Task.KEYFACT_ALIGNMENT, summary=summary), worker, aligned)
    elsewhere = Hit.objects.filter(task=Task.KEYFACT_ALIGNMENT).exclude(document=summary.document).first()
    assert _reserve_hit(elsewhere, worker, aligned).hit == elsewhere
