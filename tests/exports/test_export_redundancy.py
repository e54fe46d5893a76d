"""The export says how each item was collected: the project's redundancy policy with its parameters, and per item its
counted labels and the round whose label settled it."""

import json

import pytest

from annotation.services.topups import topups_build
from corpus.models import RedundancyPolicy
from exports.export import export_benchmark
from tests.work import add_assistance, build_all, crowd_annotator, first_round_hit, import_small, work_next_hit

pytestmark = pytest.mark.django_db


def test_each_sentence_carries_its_labels_and_the_round_that_settled_it(project, tmp_path):
    project.redundancy_policy = RedundancyPolicy.ADAPTIVE
    project.save(update_fields=["redundancy_policy"])
    import_small(project)
    add_assistance(project)
    build_all(project)
    hit = first_round_hit(project, "fv")
    first, second = hit.units.order_by("position")[:2]
    work_next_hit(crowd_annotator("ann", project), project, "fv")
    work_next_hit(crowd_annotator("bea", project), project, "fv", split=first)
    topups_build(project)
    work_next_hit(crowd_annotator("cid", project), project, "fv", split=first)

    export_benchmark(project=project, out=tmp_path / "out.jsonl")
    rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    row = next(row for row in rows if row["sentences"][:2] == [first.text, second.text])
    assert row["redundancy"] == {"policy": "adaptive", "annotators": 3}
    assert row["fact_verification_label_count"][:2] == [3, 2]
    assert row["fact_verification_settled_round"][:2] == [1, 0]
    assert row["fact_verification_label"][0] == 1  # bea and cid: an error, as three fixed annotators would say
    untouched = next(row for row in rows if row is not None and set(row["fact_verification_label_count"]) == {0})
    assert set(untouched["fact_verification_settled_round"]) == {None}
