"""Every page a person sees is independent of the project's size: lists that grow with the project come a page at a
time (page 2 exists, a page holds at most its size, a page number that is not one gives a page, never an error), and
the progress page and the quality dashboard make as many queries for a large project as for a small one."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.models import Assignment
from annotation.services.hits import build_hits
from corpus.models import Membership
from tests.work import annotator_for, crowd_annotator, import_generated, work_through

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("numbers_worker")]


def rows_of(html: str, table_id: str = "") -> int:
    """How many body rows the first table (or the table with `table_id`) of the page has."""
    start = html.index(f'id="{table_id}"') if table_id else html.index("<tbody>")
    body = html[html.index("<tbody>", start):html.index("</tbody>", start)]
    return body.count("<tr")


def pager(html: str) -> str:
    found = re.search(r'<p class="pages">(.*?)</p>', html, re.S)
    return found.group(1) if found else ""


@pytest.mark.parametrize("page, shown", [("2", "page 2 of 3"), ("3", "page 3 of 3"), ("99", "page 3 of 3"),
                                         ("x", "page 1 of 3"), ("-1", "page 3 of 3"), ("", "page 1 of 3")])
def test_the_project_pages_documents_come_a_page_at_a_time(client, project, manager, monkeypatch, page, shown):
    monkeypatch.setattr("annotation.views.projects.DOCUMENTS_PER_PAGE", 2)
    import_generated(project, documents=5, summarizers=2, sentences=2)
    client.force_login(manager)
    response = client.get(reverse("project_detail", args=[project.slug]), {"page": page})
    assert response.status_code == 200
    html = response.content.decode()
    assert shown in pager(html)
    assert rows_of(html) == (1 if shown.startswith("page 3") else 2)
    # The count is the whole corpus's, not the page's.
    assert "<dt>Documents</dt><dd>5</dd>" in html and "<dt>Summaries</dt><dd>10</dd>" in html


def test_every_document_is_on_exactly_one_page(client, project, manager, monkeypatch):
    monkeypatch.setattr("annotation.views.projects.DOCUMENTS_PER_PAGE", 2)
    import_generated(project, documents=5, summarizers=1, sentences=2)
    client.force_login(manager)
    seen = []
    for page in (1, 2, 3):
        html = client.get(reverse("project_detail", args=[project.slug]), {"page": page}).content.decode()
        seen += re.findall(r">(gen-\d)</a>", html)
    assert sorted(seen) == [f"gen-{d}" for d in range(5)]
    assert 'rel="next"' in client.get(reverse("project_detail", args=[project.slug])).content.decode()


def test_an_annotator_sees_a_page_of_their_own_hits_and_nothing_of_the_corpus(client, project, annotator,
                                                                              monkeypatch):
    monkeypatch.setattr("annotation.views.projects.WORK_PER_PAGE", 2)
    import_generated(project, documents=3, summarizers=1, sentences=2)
    build_hits(project, "fv")
    me = annotator_for(annotator)
    for _ in range(3):
        work_through(me, project, "fv")
    client.force_login(annotator)
    first = client.get(reverse("project_detail", args=[project.slug])).content.decode()
    second = client.get(reverse("project_detail", args=[project.slug]), {"page": 2}).content.decode()
    assert rows_of(first) == 2 and rows_of(second) == 1
    assert "page 2 of 2" in pager(second)
    assert "gen-0" not in first + second and "<dt>Documents</dt>" not in first


def test_the_people_page_lists_members_a_page_at_a_time(client, project, manager, django_user_model,
                                                        monkeypatch):
    monkeypatch.setattr("annotation.views.people.MEMBERS_PER_PAGE", 3)
    for n in range(6):
        user = django_user_model.objects.create_user(f"member{n}")
        Membership.objects.create(project=project, user=user, role=Membership.Role.ANNOTATOR)
    client.force_login(manager)
    url = reverse("people", args=[project.slug])
    pages = [client.get(url, {"page": page}).content.decode() for page in (1, 2, 3)]
    assert [rows_of(html) for html in pages] == [3, 3, 1]
    names = [name for html in pages for name in re.findall(r"<tr id=\"person-\d+\"><td>(\w+)", html)]
    assert sorted(names) == sorted(["mia", *[f"member{n}" for n in range(6)]])
    assert client.get(url, {"page": "many"}).status_code == 200


def crowd_work(project, workers: int, hits_each: int) -> list:
    people = [crowd_annotator(f"w{project.slug}{n}", project) for n in range(workers)]
    for person in people:
        for _ in range(hits_each):
            work_through(person, project, "fv")
    return people


def test_the_quality_pages_show_a_page_of_annotators_and_of_grades(client, project, manager, monkeypatch):
    monkeypatch.setattr("annotation.views.quality.ANNOTATORS_PER_PAGE", 2)
    monkeypatch.setattr("annotation.views.quality.GRADES_PER_PAGE", 2)
    import_generated(project, documents=3, summarizers=1, sentences=2)
    build_hits(project, "fv")
    people = crowd_work(project, workers=3, hits_each=3)
    client.force_login(manager)
    url = reverse("quality_dashboard", args=[project.slug])
    first, second = (client.get(url, {"page": page}).content.decode() for page in (1, 2))
    assert rows_of(first, "quality") == 2 and rows_of(second, "quality") == 1
    shown = set(re.findall(r'id="annotator-([0-9a-f-]+)"', first + second))
    assert shown == {str(person.public_id) for person in people}
    # The page links keep the sort.
    assert "sort=-submissions" in pager(client.get(url, {"sort": "-submissions"}).content.decode())
    one = reverse("annotator_quality", args=[project.slug, people[0].public_id])
    first, last = (client.get(one, {"page": page}).content.decode() for page in (1, 2))
    assert rows_of(first, "grades") == 2 and rows_of(last, "grades") == 1


def test_a_crowd_workers_page_shows_a_page_of_their_assignments(client, project, manager, monkeypatch):
    monkeypatch.setattr("annotation.views.crowd_manager.ROWS_PER_PAGE", 2)
    import_generated(project, documents=3, summarizers=1, sentences=2)
    build_hits(project, "fv")
    (worker,) = crowd_work(project, workers=1, hits_each=3)
    client.force_login(manager)
    url = reverse("crowd_worker", args=[project.slug, worker.public_id])
    first, second = (client.get(url, {"page": page}).content.decode() for page in (1, 2))
    assert rows_of(first, "history") == 2 and rows_of(second, "history") == 1
    manage = client.get(reverse("crowd_manage", args=[project.slug])).content.decode()
    assert worker.pseudonym in manage


def queries_of(client, url: str, **headers) -> int:
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url, **headers).status_code in (200, 286)
    return len(captured.captured_queries)


def test_the_progress_page_and_the_dashboard_make_as_many_queries_for_a_large_project_as_for_a_small_one(
        client, project, other_project, manager):
    Membership.objects.create(project=other_project, user=manager, role=Membership.Role.MANAGER)
    import_generated(project, documents=2, summarizers=1, sentences=2)
    import_generated(other_project, documents=6, summarizers=3, sentences=3)
    counts = {}
    for place, hits_each in ((project, 1), (other_project, 5)):
        build_hits(place, "fv")
        build_hits(place, "kv")
        crowd_work(place, workers=3, hits_each=hits_each)
        client.force_login(manager)
        counts[place.slug] = [
            queries_of(client, reverse("progress", args=[place.slug])),
            queries_of(client, reverse("progress", args=[place.slug]), HTTP_HX_REQUEST="true"),
            queries_of(client, reverse("quality_dashboard", args=[place.slug])),
            queries_of(client, reverse("hit_list", args=[place.slug])),
            queries_of(client, reverse("project_detail", args=[place.slug])),
        ]
    assert Assignment.objects.filter(hit__project=other_project).count() == 15
    assert counts[project.slug] == counts[other_project.slug]


def test_the_dashboards_numbers_are_the_same_as_counting_the_labels_one_by_one(client, project, manager):
    """The grouped queries give what reading every label gives (the leave-one-out majority above all)."""
    from annotation.models import Label
    from annotation.quality.dashboard import project_quality
    from annotation.quality.selectors import label_counts_q

    import_generated(project, documents=3, summarizers=2, sentences=2)
    build_hits(project, "fv")
    people = [crowd_annotator(f"v{n}", project) for n in range(4)]
    for n, person in enumerate(people):
        for turn in range(3):
            work_through(person, project, "fv", yes=(n + turn) % 3 != 0)
    dashboard = {row.annotator.pk: row for row in project_quality(project).rows}
    labels = list(Label.objects.filter(unit__hit__project=project, unit__attention_check__isnull=True)
                  .values_list("pk", "unit_id", "annotator_id", "has_error"))
    counted = set(Label.objects.filter(label_counts_q(), unit__hit__project=project).values_list("pk", flat=True))
    for person in people:
        hits = total = 0
        for _pk, unit, who, answer in labels:
            if who != person.pk or answer is None:
                continue
            others = [a for p, u, w, a in labels if u == unit and w != who and p in counted and a is not None]
            yes = sum(others)
            if others and yes * 2 != len(others):
                total += 1
                hits += int(answer == (yes * 2 > len(others)))
        row = dashboard[person.pk]
        assert (row.agreement_hits, row.agreement_total) == (hits, total)
        mine = [answer for pk, unit, who, answer in labels if who == person.pk and answer is not None]
        assert row.no_error == (mine.count(False), len(mine))
        assert row.submissions == 3 and row.graded == 3
    assert sum(row.agreement_total for row in dashboard.values()) > 0
