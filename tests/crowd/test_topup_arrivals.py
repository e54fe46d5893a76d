"""A worker a provider sends to a top-up HIT (MTurk chooses the HIT) who labelled one of its items before is refused
with the reason: an item's labels come from different people (paper 3.4)."""

import pytest
from django.db import transaction

from annotation.crowd import claims
from annotation.models import Annotator, Hit
from annotation.services.topups import topups_build
from corpus.models import RedundancyPolicy
from tests.work import build_all, first_round_hit, import_small, qualify, work_next_hit

pytestmark = pytest.mark.django_db


def test_a_worker_who_labelled_an_item_of_a_top_up_is_refused_at_arrival(project):
    project.redundancy_policy = RedundancyPolicy.ADAPTIVE
    project.save(update_fields=["redundancy_policy"])
    import_small(project)
    build_all(project)
    ann, bea, cid = (qualify(Annotator.objects.create(provider="mturk", external_id=name), project)
                     for name in ("ANN", "BEA", "CID"))
    split = first_round_hit(project, "fv").units.order_by("position").first()
    work_next_hit(ann, project, "fv")
    work_next_hit(bea, project, "fv", split=split)
    topups_build(project)
    topup = Hit.objects.get(project=project, round=1)
    for worker in (ann, bea):
        with pytest.raises(claims.ClaimRefused, match="already labelled an item of this HIT"), transaction.atomic():
            claims._reserve_hit(topup, worker, project)
    with transaction.atomic():
        assert claims._reserve_hit(topup, cid, project).hit == topup
