"""The manager's progress, HIT list, HIT detail, annotator list and "build HITs": managers only."""

import pytest
from django.urls import reverse

from annotation.models import Hit
from annotation.services.assignment import reserve_next_hit
from tests.work import annotator_for, crowd_annotator, import_small, work_through

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("numbers_worker")]


def manager_urls(project):
    hit = Hit.objects.filter(project=project).first()
    return [reverse("progress", args=[project.slug]), reverse("hit_list", args=[project.slug]),
            reverse("hit_detail", args=[project.slug, hit.public_id]),
            reverse("annotator_list", args=[project.slug])]


def test_only_managers_see_the_work_pages(client, corpus, manager, annotator, other_annotator, outsider):
    urls = manager_urls(corpus)
    for url in urls:
        response = client.get(url)
        assert response.status_code == 302 and response.url.startswith(reverse("login"))
    for user, status in ((annotator, 403), (other_annotator, 403), (outsider, 404), (manager, 200)):
        client.force_login(user)
        for url in urls:
            assert client.get(url).status_code == status, (user, url)


def test_the_progress_page_counts_units_and_hits_per_task_and_domain(client, corpus, manager):
    for name in ("a", "b"):
        work_through(crowd_annotator(name), corpus, "fv")
    reserve_next_hit(crowd_annotator("c"), corpus, "fv", confirmed=True)
    client.force_login(manager)
    response = client.get(reverse("progress", args=["alpha"]))
    progress = {entry["task"]: entry for entry in response.context["progress"]}
    fv = progress["fv"]
    assert [row["domain"] for row in fv["domains"]] == ["booking", "news"]
    # The first FV HIT (booking, m-bad, 2 sentences) has 2 of its 3 submissions and one open reservation.
    booking = fv["domains"][0]
    assert (booking["units"], booking["units_done"], booking["hits"], booking["hits_done"]) == (3, 0, 2, 0)
    assert (booking["submissions"], booking["submissions_needed"], booking["open"]) == (2, 6, 1)
    assert fv["total"]["units"] == 6 and progress["kv"]["total"]["units"] == 2
    html = response.content.decode()
    assert 'hx-trigger="every 5s"' in html and "<progress" in html


def test_the_progress_section_updates_by_polling_and_stops_when_all_is_done(client, project, manager):
    import_small(project)
    from annotation.services.hits import build_hits

    project.annotators_per_unit = 1
    project.save()
    build_hits(project, "kv")
    client.force_login(manager)
    url = reverse("progress", args=["alpha"])
    fragment = client.get(url, HTTP_HX_REQUEST="true")
    assert fragment.status_code == 200
    assert fragment.content.decode().startswith('<div id="progress"') and "<html" not in fragment.content.decode()
    assert "0 / 2" in fragment.content.decode()
    work_through(crowd_annotator("a"), project, "kv")
    # Finishing KV created the document's KA work: still polling.
    fragment = client.get(url, HTTP_HX_REQUEST="true")
    assert fragment.status_code == 200 and "0 / 6" in fragment.content.decode()
    # A crowd worker gets one HIT of a document's key-facts (tests/quality/test_cross_hit.py).
    work_through(crowd_annotator("b"), project, "ka")
    work_through(crowd_annotator("c"), project, "ka")
    fragment = client.get(url, HTTP_HX_REQUEST="true")
    # Everything built has its labels: htmx's "stop polling" status, with the final numbers.
    assert fragment.status_code == 286
    assert "6 / 6" in fragment.content.decode() and "hx-trigger" not in fragment.content.decode()


def test_the_hit_detail_shows_every_label_by_pseudonym(client, corpus, manager, annotator):
    # A worker id with a hyphen: it cannot turn up by chance inside the page's random tokens (letters and digits).
    worker = crowd_annotator("worker-7731")
    assignment = work_through(worker, corpus, "kv", yes=False)
    client.force_login(manager)
    html = client.get(reverse("hit_detail", args=["alpha", assignment.hit.public_id])).content.decode()
    assert worker.pseudonym in html and "worker-7731" not in html
    assert html.count("<td>no<br>") == 2 and "Submitted" in html


def test_the_hit_detail_names_the_ai_judgment_in_words(client, corpus, manager):
    hit = Hit.objects.filter(project=corpus, task="fv").order_by("position").first()
    client.force_login(manager)
    html = client.get(reverse("hit_detail", args=["alpha", hit.public_id])).content.decode()
    assert "AI: No error (" in html or "AI: Relation error (" in html
    assert "AI: no_error" not in html and "AI: relation" not in html


def test_the_hit_list_and_annotator_list(client, corpus, manager, annotator):
    work_through(annotator_for(annotator), corpus, "fv")
    client.force_login(manager)
    html = client.get(reverse("hit_list", args=["alpha"]) + "?task=kv").content.decode()
    assert html.count("Key-fact validation</a>") == 1 and "Fact verification</a>" not in html
    html = client.get(reverse("annotator_list", args=["alpha"])).content.decode()
    assert annotator_for(annotator).pseudonym in html and "ann</td>" not in html


def test_the_hit_list_counts_a_place_added_by_sending_a_hit_back(client, corpus, manager):
    hit = Hit.objects.filter(project=corpus, task="kv").order_by("position").first()
    client.force_login(manager)
    row = f'<a href="{reverse("hit_detail", args=["alpha", hit.public_id])}">'
    before = client.get(reverse("hit_list", args=["alpha"]) + "?task=kv").content.decode()
    assert "<td class=\"num\">0 / 3" in before.split(row, 1)[1].split("</tr>", 1)[0]
    client.post(reverse("hit_send_back", args=["alpha", hit.public_id]))
    after = client.get(reverse("hit_list", args=["alpha"]) + "?task=kv").content.decode()
    assert "<td class=\"num\">0 / 4" in after.split(row, 1)[1].split("</tr>", 1)[0]


def test_managers_build_hits_and_nobody_else_can(client, project, manager, annotator, outsider,
                                                 django_capture_on_commit_callbacks):
    import_small(project)
    url = reverse("hits_build", args=["alpha"])
    client.force_login(annotator)
    assert client.post(url, {"task": "fv"}).status_code == 403
    client.force_login(outsider)
    assert client.post(url, {"task": "fv"}).status_code == 404
    assert not Hit.objects.exists()
    client.force_login(manager)
    with django_capture_on_commit_callbacks(execute=True):
        started = client.post(url, {"task": "fv"})
    response = client.get(started.url)  # the progress page, once the build (here: in-process) is done
    assert "Fact verification: 4 new HITs with 6 units" in response.content.decode()
    response = client.post(url, {"task": "<b>bogus</b>"})
    assert response.status_code == 400
    assert ("Choose a task to build HITs for: fact verification, key-fact validation or key-fact alignment, or all "
            "three. Nothing was built.") in response.content.decode() and "bogus" not in response.content.decode()
    assert client.get(url).status_code == 405
    assert Hit.objects.count() == 4


def test_the_manager_pages_take_a_fixed_number_of_queries(client, project, manager, django_assert_max_num_queries):
    from tests.work import build_all, import_generated

    import_generated(project, documents=6, summarizers=3)
    build_all(project)
    workers = [crowd_annotator(f"q{i}") for i in range(4)]
    for worker in workers:
        work_through(worker, project, "fv")
    client.force_login(manager)
    hit = Hit.objects.filter(project=project, task="fv", assignments__isnull=False).first()
    client.get(reverse("annotator_list", args=["alpha"]))  # the stored quality numbers: a job's work, not the page's
    for url in (reverse("progress", args=["alpha"]), reverse("hit_list", args=["alpha"]),
                reverse("hit_detail", args=["alpha", hit.public_id]), reverse("annotator_list", args=["alpha"])):
        with django_assert_max_num_queries(12):
            assert client.get(url).status_code == 200
