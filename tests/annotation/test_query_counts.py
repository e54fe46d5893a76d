"""The pages a manager or an annotator keeps open (the crowd page, the progress fragment polled every 5 s, every
fragment that polls a job) make exactly the same number of queries for one batch and a few HITs as for many batches
and many HITs: a count that grows with the work is a page that slows down while people work.

Each count is asserted exactly, not as a maximum: a new query on one of these pages must be a decision."""

import re
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from annotation.crowd.links import link_create
from annotation.job_kinds import QUALITY, REVIEW_TALLY
from annotation.models import Assignment, CrowdBatch, CrowdClaim, CrowdHit, Decision, LedgerEntry
from annotation.services.hits import build_hits
from corpus.models import Job
from corpus.snapshots import numbers_update
from exports.job_kinds import ANALYTICS
from tests.work import crowd_annotator, import_generated, work_through

pytestmark = pytest.mark.django_db

SMALL, LARGE = 1, 6


# Transaction control and the session row differ between databases and set-ups, not between versions of this code
# (as in test_serving_queries).
NOT_COUNTED = re.compile(r'^\s*(SAVEPOINT|RELEASE SAVEPOINT|ROLLBACK|BEGIN|COMMIT)\b|"django_session"')


def queries_of(client, url: str, **headers) -> int:
    """The queries of one GET, after one GET of the same page (caches that fill once per process are full)."""
    client.get(url, **headers)
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url, **headers)
    assert response.status_code in (200, 286), (url, response.status_code)
    return sum(not NOT_COUNTED.search(query["sql"]) for query in captured.captured_queries)


def crowd_work(project, batches: int) -> list[dict]:
    """`batches` Prolific batches, each with two claimed submissions, an approval paid with a reward and its fee,
    a rejection with a place reopened, a failed bonus, a discarded claim and an unconfirmed submission; a private
    link and a publishing job per batch. Returns what each batch's row must say, newest batch first."""
    import_generated(project, documents=2 * batches + 1, summarizers=1, sentences=2)
    build_hits(project, "fv")
    expected = []
    for b in range(batches):
        batch = CrowdBatch.objects.create(project=project, task="fv", provider="prolific", status="published",
                                          reward_usd=Decimal("0.40"), assignments_per_hit=3, external_id=f"s{b}")
        done = []
        for w in range(4):
            person = crowd_annotator(f"{project.slug}-{b}-{w}", project)
            assignment = work_through(person, project, "fv")
            CrowdClaim.objects.create(assignment=assignment, batch=batch, provider="prolific",
                                      external_assignment_id=f"{project.slug}-{b}-{w}", worker_id=person.external_id)
            CrowdHit.objects.get_or_create(batch=batch, hit=assignment.hit,
                                           defaults={"request_token": f"{project.slug}-{b}-{assignment.hit_id}",
                                                     "published_at": timezone.now()})
            done.append(assignment)
        CrowdHit.objects.create(batch=batch, hit=done[0].hit.project.hits.exclude(
            crowd_hits__batch=batch).first(), request_token=f"{project.slug}-{b}-pending")  # not published yet
        approved, rejected, discarded, unconfirmed = done
        Assignment.objects.filter(pk=discarded.pk).update(status=Assignment.Status.DISCARDED)
        Assignment.objects.filter(pk=unconfirmed.pk).update(confirmed_at=None)

        def decide(assignment, kind, status=Decision.Status.DONE, **fields):
            return Decision.objects.create(project=project, annotator=assignment.annotator, assignment=assignment,
                                           kind=kind, status=status, idempotency_key=f"{kind}:{assignment.pk}",
                                           **fields)

        approval = decide(approved, Decision.Kind.APPROVE)
        for kind, amount in ((LedgerEntry.Kind.REWARD, "0.40"), (LedgerEntry.Kind.REWARD_FEE, "0.13")):
            LedgerEntry.objects.create(project=project, batch=batch, annotator=approved.annotator,
                                       decision=approval, provider="prolific", kind=kind, amount_usd=Decimal(amount))
        decide(rejected, Decision.Kind.REJECT)
        decide(rejected, Decision.Kind.ADD_PLACE)
        decide(approved, Decision.Kind.ADD_PLACE, provider_response={"local": True})  # no place on the provider
        decide(rejected, Decision.Kind.BLOCK, status=Decision.Status.PENDING)
        decide(unconfirmed, Decision.Kind.BONUS, status=Decision.Status.FAILED, amount_usd=Decimal("0.10"),
               last_error="The provider said no")
        link_create(project=project, task="fv", label=f"Reader {b}", days=7)
        Job.objects.create(project=project, kind="crowd_publish", status=Job.Status.DONE,
                           params={"task": "fv", "provider": "prolific"}, result={"batch": str(batch.public_id)})
        expected.insert(0, {"published": len({a.hit_id for a in done}), "accepted": 4, "submitted": 3,
                            "unconfirmed": 1, "discarded": 1, "approved": 1, "rejected": 1, "places_added": 1,
                            "paid": Decimal("0.53")})
    return expected



def table_rows(html: str, table_id: str) -> list[list[str]]:
    """The cells' text of each body row of the table `table_id`."""
    body = html[html.index("<tbody>", html.index(f'id="{table_id}"')):]
    body = body[:body.index("</tbody>")]
    return [[re.sub(r"<[^>]+>", "", cell).strip() for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
            for row in re.findall(r"<tr>(.*?)</tr>", body, re.S)]


@pytest.mark.parametrize("batches", [SMALL, LARGE])
def test_the_crowd_page_makes_15_queries_for_one_batch_as_for_six(client, project, manager, batches):
    expected = crowd_work(project, batches)
    client.force_login(manager)
    url = reverse("crowd_manage", args=[project.slug])
    assert queries_of(client, url) == 15
    html = client.get(url).content.decode()
    assert len(table_rows(html, "batches")) == batches == len(expected)


def test_each_batch_row_counts_its_own_claims_decisions_and_pay(client, project, manager):
    expected = crowd_work(project, 3)
    client.force_login(manager)
    rows = table_rows(client.get(reverse("crowd_manage", args=[project.slug])).content.decode(), "batches")
    figures = ("published", "accepted", "submitted", "unconfirmed", "discarded", "approved", "rejected",
               "places_added", "paid")
    assert [dict(zip(figures, row[4:])) for row in rows] == [
        {name: str(row[name]) for name in figures} for row in expected]
    # Nothing of the batches is paid twice over: the page's total is the ledger's.
    assert "total 1.59 USD" in client.get(reverse("crowd_manage", args=[project.slug])).content.decode()


# The pages a manager keeps open while people work, with the queries each makes (the htmx fragments as polled).
POLLED = {
    "crowd page": 15,
    "progress page": 6,
    "progress fragment": 5,
    "a job's fragment": 4,
    "the assist card": 10,
    "quality numbers' state": 8,
    "review list's state": 12,
    "analytics figures' state": 15,
}


def polled_counts(client, project) -> dict[str, int]:
    slug, htmx = project.slug, {"HTTP_HX_REQUEST": "true"}
    job = project.jobs.filter(kind="crowd_publish").first()
    Job.objects.filter(pk=job.pk).update(status=Job.Status.RUNNING)  # still followed
    # Stored numbers are polled while their job runs (asked for with the page's button; no worker here).
    for code, variant in ((QUALITY, ""), (REVIEW_TALLY, ""), (ANALYTICS, "simulated")):
        numbers_update(project, code, variant)
    return {
        "crowd page": queries_of(client, reverse("crowd_manage", args=[slug])),
        "progress page": queries_of(client, reverse("progress", args=[slug])),
        "progress fragment": queries_of(client, reverse("progress", args=[slug]), **htmx),
        "a job's fragment": queries_of(client, reverse("job_status", args=[slug, job.pk]), **htmx),
        "the assist card": queries_of(client, reverse("project_detail", args=[slug]) + "?part=assist", **htmx),
        **{name: queries_of(client, reverse("numbers_status", args=[slug, code]) + query, **htmx)
           for name, code, query in (("quality numbers' state", QUALITY, ""),
                                     ("review list's state", REVIEW_TALLY, "?shown=x"),
                                     ("analytics figures' state", ANALYTICS, "?variant=simulated"))},
    }


@pytest.mark.queued_numbers
@pytest.mark.parametrize("batches", [SMALL, LARGE])
def test_every_polled_page_makes_as_many_queries_for_one_batch_as_for_six(client, project, manager, batches):
    crowd_work(project, batches)
    build_hits(project, "kv")
    client.force_login(manager)
    assert polled_counts(client, project) == POLLED


@pytest.mark.parametrize("batches", [SMALL, LARGE])
def test_the_progress_of_restored_labels_takes_one_query_more_for_few_hits_as_for_many(client, project, manager,
                                                                                          batches):
    """Submissions restored from an export did not label every unit: their units' labels are counted, by the
    database, in one query whatever the number of HITs (after the one that finds there are any)."""
    crowd_work(project, batches)
    Assignment.objects.filter(hit__project=project).update(labelled_every_unit=False)
    client.force_login(manager)
    assert queries_of(client, reverse("progress", args=[project.slug]), HTTP_HX_REQUEST="true") == POLLED["progress fragment"] + 1


# The cost page: its figures of every label are stored numbers (kind "costs"); the page reads their basis, the stored
# figures, and the money held and paid now, in as many queries for one batch as for six.
COSTS_PAGE = {"current": 10, "older than the data": 11}


@pytest.mark.parametrize("batches", [SMALL, LARGE])
def test_the_cost_page_makes_as_many_queries_for_one_batch_as_for_six(client, project, manager, batches):
    from annotation.job_kinds import COSTS
    from tests.conftest import numbers_now

    crowd_work(project, batches)
    numbers_now(project, COSTS)
    client.force_login(manager)
    url = reverse("costs", args=[project.slug])
    counts = {"current": queries_of(client, url)}
    assert 'id="money"' in client.get(url).content.decode()
    Assignment.objects.filter(hit__project=project, status=Assignment.Status.SUBMITTED).update(
        status=Assignment.Status.DISCARDED)
    counts["older than the data"] = queries_of(client, url)
    assert "Older than the data" in client.get(url).content.decode()
    assert counts == COSTS_PAGE and not Job.objects.filter(kind=COSTS, status=Job.Status.QUEUED).exists()
