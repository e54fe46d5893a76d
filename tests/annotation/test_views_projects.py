"""Project, document and import pages: each view is tried by its manager, an annotator, an outsider, a stranger."""

from pathlib import Path

import pytest
from django.urls import reverse

from corpus.importing import import_dataset
from corpus.models import Document, Membership, Project

SMALL_JSONL = Path(__file__).resolve().parents[1] / "fixtures" / "import" / "small.jsonl"

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("numbers_worker")]


@pytest.fixture
def imported(project):
    import_dataset(project=project, data=SMALL_JSONL.read_bytes(), filename="small.jsonl")
    return project


def test_anonymous_users_are_sent_to_log_in(client, imported):
    for url in (reverse("project_list"), reverse("project_detail", args=["alpha"]),
                reverse("import_upload", args=["alpha"])):
        response = client.get(url)
        assert response.status_code == 302 and response.url.startswith(reverse("login"))


def test_the_project_list_shows_only_ones_projects(client, imported, manager, outsider):
    client.force_login(manager)
    assert b"Alpha" in client.get(reverse("project_list")).content
    client.force_login(outsider)
    page = client.get(reverse("project_list")).content
    assert b"Alpha" not in page and b"Beta" in page


def test_it_shows_the_project_to_its_members_only(client, imported, manager, annotator, outsider):
    url = reverse("project_detail", args=["alpha"])
    client.force_login(manager)
    response = client.get(url)
    assert response.status_code == 200
    assert b"t-dial-1" in response.content and b"Import a dataset" in response.content
    client.force_login(annotator)
    response = client.get(url)
    assert response.status_code == 200 and b"Import a dataset" not in response.content
    client.force_login(outsider)
    assert client.get(url).status_code == 404


def test_the_project_page_leads_its_managers_to_the_crowd_page(client, imported, manager, annotator):
    crowd = reverse("crowd_manage", args=["alpha"])
    client.force_login(manager)
    project_page = client.get(reverse("project_detail", args=["alpha"])).content.decode()
    assert f'href="{crowd}"' in project_page
    for page in ("progress", "hit_list", "annotator_list", "quality_dashboard", "exports_analytics"):
        assert f'href="{crowd}"' in client.get(reverse(page, args=["alpha"])).content.decode(), page
    assert client.get(crowd).status_code == 200
    client.force_login(annotator)
    assert crowd not in client.get(reverse("project_detail", args=["alpha"])).content.decode()


def test_the_document_page_is_for_managers(client, imported, manager, annotator, outsider):
    document = Document.objects.get(uid="t-dial-1")
    url = document.get_absolute_url()
    client.force_login(annotator)
    assert client.get(url).status_code == 403
    client.force_login(outsider)
    assert client.get(url).status_code == 404
    client.force_login(manager)
    assert client.get(url).status_code == 200


def test_a_document_of_another_project_is_not_reachable_through_mine(client, imported, manager, other_project):
    foreign = import_dataset(project=other_project, data=SMALL_JSONL.read_bytes(), filename="small.jsonl")
    assert foreign.documents_created == 2
    foreign_document = other_project.documents.first()
    client.force_login(manager)
    assert client.get(reverse("document_detail", args=["alpha", foreign_document.pk])).status_code == 404


def test_the_document_page_escapes_placeholders_and_markup(client, imported, manager):
    client.force_login(manager)
    html = client.get(Document.objects.get(uid="t-dial-1").get_absolute_url()).content.decode()
    assert "&lt;PHONENUMBER_1&gt;" in html and "<PHONENUMBER_1>" not in html
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in html and "<script>alert" not in html
    assert "&lt;p&gt;Bye&lt;/p&gt;" in html
    assert '<span class="speaker">SYSTEM</span>' in html


def test_a_manager_imports_through_the_upload_page(client, project, manager, django_capture_on_commit_callbacks):
    client.force_login(manager)
    with SMALL_JSONL.open("rb") as upload, django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("import_upload", args=["alpha"]), {"file": upload})
    assert response.status_code == 302
    assert project.documents.count() == 2


def test_the_upload_page_lists_every_problem_escaped(client, project, manager, tmp_path,
                                                     django_capture_on_commit_callbacks):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"uid": "<b>x</b>"}\n', encoding="utf-8")
    client.force_login(manager)
    with bad.open("rb") as upload, django_capture_on_commit_callbacks(execute=True):
        started = client.post(reverse("import_upload", args=["alpha"]), {"file": upload})
    response = client.get(started.url)  # the job's page, once the worker (here: in-process) checked the file
    html = response.content.decode()
    assert response.status_code == 200
    assert "Nothing was imported: 7 problems" in html
    assert "missing required field" in html
    assert project.documents.count() == 0


def test_annotators_and_outsiders_cannot_import(client, project, annotator, outsider):
    url = reverse("import_upload", args=["alpha"])
    for user, status in ((annotator, 403), (outsider, 404)):
        client.force_login(user)
        with SMALL_JSONL.open("rb") as upload:
            assert client.post(url, {"file": upload}).status_code == status
    assert project.documents.count() == 0


def test_managers_create_projects_and_annotators_cannot(client, manager, annotator):
    data = {
        "name": "Gamma", "slug": "gamma", "annotators_per_unit": 3, "highlight_fraction": 0.3,
        "attention_check_rate": 0.2, "assistance": "reason", "long_threshold_words": 900, "hourly_wage_usd": "10.88",
        "bonus_usd": "25", "bonus_every_hits": 500, "min_approval_rate": 95, "min_approved_hits": 1000,
        "worker_locales": "AU,CA,NZ,GB,US",
    }
    client.force_login(annotator)
    assert client.post(reverse("project_create"), data).status_code == 403
    client.force_login(manager)
    response = client.post(reverse("project_create"), data)
    assert response.status_code == 302
    gamma = Project.objects.get(slug="gamma")
    assert gamma.role_of(manager) == Membership.Role.MANAGER


def test_the_api_lists_documents_of_ones_projects_only(client, imported, manager, annotator, outsider):
    assert client.get("/api/documents/").status_code == 403
    client.force_login(manager)
    body = client.get("/api/documents/").json()
    assert body["count"] == 2 and {d["uid"] for d in body["results"]} == {"t-news-1", "t-dial-1"}
    # An annotator reads documents only through its own HITs (tests/annotation/test_read_scope.py): none yet.
    client.force_login(annotator)
    assert client.get("/api/documents/").json()["count"] == 0
    client.force_login(outsider)
    assert client.get("/api/documents/").json()["count"] == 0
    assert client.get(f"/api/documents/{Document.objects.first().pk}/").status_code == 404
    assert client.get("/api/projects/alpha/").status_code == 404


def test_the_api_schema_is_served(client, annotator):
    client.force_login(annotator)
    response = client.get("/api/schema/")
    assert response.status_code == 200 and b"/api/documents/" in response.content


@pytest.mark.parametrize("changes, message", [
    ({"hourly_wage_usd": "-10"}, "The hourly wage is at least 7.25 USD, the floor this site sets"),
    ({"hourly_wage_usd": "0"}, "The hourly wage is at least 7.25 USD"),
    ({"hourly_wage_usd": "NaN"}, "Enter a number."),
    ({"bonus_usd": "-25"}, "The bonus is 0 USD (no bonus) or more."),
    ({"bonus_every_hits": "0"}, "Ensure this value is greater than or equal to 1."),
    ({"highlight_fraction": "Infinity"}, "Enter a number."),
])
def test_a_new_project_pays_at_least_the_floor_and_no_negative_bonus(client, manager, changes, message):
    import html

    data = {
        "name": "Gamma", "slug": "gamma", "annotators_per_unit": 3, "highlight_fraction": 0.3,
        "attention_check_rate": 0.2, "assistance": "reason", "long_threshold_words": 900, "hourly_wage_usd": "10.88",
        "bonus_usd": "25", "bonus_every_hits": 500, "min_approval_rate": 95, "min_approved_hits": 1000,
        "worker_locales": "AU,CA,NZ,GB,US", **changes,
    }
    client.force_login(manager)
    response = client.post(reverse("project_create"), data)
    assert response.status_code in (200, 400) and message in html.unescape(response.content.decode())
    assert not Project.objects.filter(slug="gamma").exists()
    no_bonus = client.post(reverse("project_create"), {**data, "hourly_wage_usd": "7.25", "bonus_usd": "0",
                                                       "bonus_every_hits": 500, "highlight_fraction": 0.3})
    assert no_bonus.status_code == 302 and Project.objects.get(slug="gamma").bonus_usd == 0


def test_a_project_made_on_the_page_starts_adaptive_and_one_made_otherwise_fixed(client, manager):
    client.force_login(manager)
    page = client.get(reverse("project_create")).content.decode()
    assert '<option value="adaptive" selected>' in page and "Annotators the result stands for" in page
    data = {
        "name": "Gamma", "slug": "gamma", "annotators_per_unit": 3, "highlight_fraction": 0.3,
        "attention_check_rate": 0.2, "assistance": "reason", "long_threshold_words": 900, "hourly_wage_usd": "10.88",
        "bonus_usd": "25", "bonus_every_hits": 500, "min_approval_rate": 95, "min_approved_hits": 1000,
        "worker_locales": "AU,CA,NZ,GB,US",
    }
    assert client.post(reverse("project_create"), {**data, "redundancy_policy": "adaptive"}).status_code == 302
    assert Project.objects.get(slug="gamma").redundancy_policy == "adaptive"
    # A form sent without the choice (a script older than it) keeps the paper's fixed design, as the model does.
    assert client.post(reverse("project_create"), {**data, "slug": "delta"}).status_code == 302
    assert Project.objects.get(slug="delta").redundancy_policy == "fixed"
    assert Project.objects.create(slug="epsilon", name="Epsilon").redundancy_policy == "fixed"
    response = client.post(reverse("project_create"), {**data, "slug": "zeta", "redundancy_policy": "most"})
    assert "Select a valid choice" in response.content.decode() and not Project.objects.filter(slug="zeta").exists()


def test_the_ai_assistance_counts_follow_a_run_until_it_ends(client, imported, manager, annotator):
    from assist.models import PreLabel
    from corpus.models import Job, SummarySentence

    url = reverse("project_detail", args=["alpha"])
    job = Job.objects.create(project=imported, kind="assist", status=Job.Status.RUNNING)
    client.force_login(manager)
    card = f'hx-get="{url}?part=assist"'
    assert card in client.get(url).content.decode()
    response = client.get(url, {"part": "assist"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and card in response.content.decode()
    assert "0 sentences pre-labeled" in response.content.decode()

    sentences = SummarySentence.objects.filter(summary__document__project=imported)[:2]
    for sentence in sentences:
        PreLabel.objects.create(summary_sentence=sentence, status=PreLabel.Status.OK, backend="offline-similarity",
                                model="m", prompt_version="t", category="no_error", reason="ok")
    job.status = Job.Status.DONE
    job.save(update_fields=["status"])
    response = client.get(url, {"part": "assist"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 286  # the run ended: htmx stops asking, the last counts stay
    page = response.content.decode()
    assert "2 sentences pre-labeled (0 flagged)" in page and card not in page and "<h1>" not in page

    client.force_login(annotator)
    assert 'id="assist"' not in client.get(url, {"part": "assist"}, HTTP_HX_REQUEST="true").content.decode()
