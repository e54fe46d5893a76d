"""The export's bytes, pinned on a small project (tests/fixtures/export): how the rows are read and written may
change for speed, what a reader downloads may not. A deliberate change of the format rewrites the pinned files
(FINEGRAIN_PIN_EXPORT=1) and shows up in their diff."""

import os
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest

from annotation.models import Adjudication, Annotator, Assignment, ItemFlag, Label, Task, Unit
from corpus.models import Document
from exports.export import ExportOptions, export_benchmark
from exports.simulate import simulate_annotations
from tests.work import import_generated

PINNED = Path(__file__).resolve().parents[1] / "fixtures" / "export"


@pytest.fixture
def labelled(project):
    """Labels of 3 simulated annotators on every task, a label left empty, a settled FV label, a flag, text beyond
    ASCII; pseudonyms and times fixed, so that the file with the annotators' labels can be pinned too."""
    import_generated(project, documents=4, summarizers=3, sentences=3, words_per_sentence=5)
    Document.objects.filter(uid="gen-1").update(text="Zoë said \"naïve\" — 東京, a line\nbreak and a tab\t.")
    simulate_annotations(project=project, annotators=3, accuracy=0.7, seed=11)
    # An FV vote missing (a tie, an error by the tie rule) and a KA cell without any vote (scores left empty).
    first = Label.objects.filter(unit__task=Task.FACT_VERIFICATION).order_by(
        "unit__hit__document__uid", "unit__hit__summary__model", "unit__summary_sentence__index", "annotator_id")
    first.filter(pk=first.first().pk).update(has_error=None)
    cell = Unit.objects.filter(task=Task.KEYFACT_ALIGNMENT).order_by(
        "hit__document__uid", "hit__summary__model", "keyfact__index", "summary_sentence__index").last()
    Label.objects.filter(unit=cell).update(aligned=None)
    unit = Unit.objects.filter(task=Task.FACT_VERIFICATION).order_by(
        "hit__document__uid", "hit__summary__model", "summary_sentence__index")[4]
    Adjudication.objects.create(unit=unit, has_error=True, error_types=["Entity Error"], reason="Settled <here>.")
    for number, annotator in enumerate(Annotator.objects.order_by("external_id"), start=1):
        Annotator.objects.filter(pk=annotator.pk).update(public_id=uuid.UUID(int=number))
    assignment = Assignment.objects.filter(hit=unit.hit, status=Assignment.Status.SUBMITTED).order_by(
        "annotator__external_id").first()
    ItemFlag.objects.create(assignment=assignment, unit=unit, comment="Unclear: “which” council? <b>")
    moment = datetime(2026, 11, 27, 8, 30, tzinfo=UTC)
    ItemFlag.objects.update(created=moment, updated_at=moment)
    Adjudication.objects.update(updated_at=moment)
    project.adjudication_in_aggregation = True
    project.save(update_fields=["adjudication_in_aggregation"])
    return project


@pytest.mark.parametrize("name, extra", [
    ("release.jsonl", {}), ("release.json", {}),
    # Every counted label, the flags and the adjudications, with who and when.
    ("release.annotator_labels.jsonl", {"annotator_labels": True, "include_simulated": True}),
])
def test_it_writes_the_pinned_bytes(labelled, tmp_path, name, extra):
    out = tmp_path / name
    result = export_benchmark(project=labelled, out=out, options=ExportOptions(format=name.split(".")[-1], **extra))
    assert [path.name for path in result.files] == [name]
    if os.environ.get("FINEGRAIN_PIN_EXPORT"):
        (PINNED / name).write_bytes(out.read_bytes())
    assert out.read_bytes() == (PINNED / name).read_bytes()
