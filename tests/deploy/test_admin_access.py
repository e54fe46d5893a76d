"""The Django admin is the operators' (superusers'). Managers are not staff: Django's `corpus.add_project` permission
lets them create projects, and the admin refuses them every page, its `r/<content type>/<id>/` shortcut included,
which would otherwise redirect them to any project's pages and so name it."""

from pathlib import Path

import pytest
from django.contrib.contenttypes.models import ContentType
from django.urls import reverse

from corpus.importing import import_dataset
from corpus.models import Membership, Project
from tests.work import may_create_projects

pytestmark = pytest.mark.django_db

SMALL_JSONL = Path(__file__).resolve().parents[1] / "fixtures" / "import" / "small.jsonl"
NEW_PROJECT = {
    "name": "Gamma", "slug": "gamma", "annotators_per_unit": 3, "highlight_fraction": 0.3,
    "attention_check_rate": 0.2, "assistance": "reason", "long_threshold_words": 900, "hourly_wage_usd": "10.88",
    "bonus_usd": "25", "bonus_every_hits": 500, "min_approval_rate": 95, "min_approved_hits": 1000,
    "worker_locales": "AU,CA,NZ,GB,US",
}


@pytest.fixture(params=[False, True], ids=["manager", "staff-manager"])
def manager(request, manager):
    """The project's manager, also as a staff account: how managers were made before, and may still be."""
    if request.param:
        manager.is_staff = True
        manager.save(update_fields=["is_staff"])
    return manager


@pytest.fixture
def operator(django_user_model):
    return django_user_model.objects.create_superuser("root", password="pw-operator-1")


def shortcut_urls(project: Project) -> list[str]:
    """The admin's redirects to the project's page and to one of its documents' pages."""
    import_dataset(project=project, data=SMALL_JSONL.read_bytes(), filename="small.jsonl")
    return [reverse("admin:view_on_site", args=[ContentType.objects.get_for_model(obj).pk, obj.pk])
            for obj in (project, project.documents.first())]


def test_it_sends_anonymous_visitors_to_the_admin_login(client):
    response = client.get("/admin/")

    assert response.status_code == 302 and response.url.startswith("/admin/login/")


def test_it_refuses_an_annotator(client, annotator):
    client.force_login(annotator)

    response = client.get("/admin/")

    assert response.status_code == 302 and response.url.startswith("/admin/login/")


def test_it_refuses_an_annotators_password_on_the_admin_login(client, annotator, locmem_cache):
    response = client.post("/admin/login/", {"username": "ann", "password": "pw-annotator-1"})

    assert response.status_code == 200
    assert "superuser account" in response.content.decode()
    assert "_auth_user_id" not in client.session


def test_it_refuses_a_manager_every_page(client, manager):
    client.force_login(manager)

    for url in (reverse("admin:index"), reverse("admin:auth_user_changelist"),
                reverse("admin:auth_user_change", args=[manager.pk]), reverse("admin:password_change")):
        response = client.get(url)
        assert response.status_code == 302 and response.url.startswith("/admin/login/"), url


def test_it_refuses_a_managers_password_on_the_admin_login(client, manager, locmem_cache):
    response = client.post("/admin/login/", {"username": "mia", "password": "pw-manager-1"})

    assert response.status_code == 200
    assert "superuser account" in response.content.decode()
    assert "_auth_user_id" not in client.session


def test_its_shortcut_never_leads_a_manager_to_another_projects_pages(client, manager, other_project):
    client.force_login(manager)

    for url in shortcut_urls(other_project):
        response = client.get(url, follow=True)
        assert response.redirect_chain[0][0].startswith("/admin/login/")
        assert all(other_project.slug not in target for target, _ in response.redirect_chain)
        assert other_project.slug not in response.content.decode()


def test_it_opens_for_a_superuser(client, operator, other_project):
    client.force_login(operator)

    assert client.get(reverse("admin:index")).status_code == 200
    project_page, document_page = shortcut_urls(other_project)
    assert client.get(project_page).url.endswith(reverse("project_detail", args=["beta"]))
    assert client.get(document_page).url.endswith(other_project.documents.first().get_absolute_url())


def test_the_permission_not_staff_status_lets_an_account_create_projects(client, django_user_model):
    staff = django_user_model.objects.create_user("old-style", password="pw-staff-1", is_staff=True)
    client.force_login(staff)
    assert client.post(reverse("project_create"), NEW_PROJECT).status_code == 403
    assert not Project.objects.filter(slug="gamma").exists()

    granted = may_create_projects(django_user_model.objects.create_user("new-style", password="pw-manager-2"))
    client.force_login(granted)
    response = client.post(reverse("project_create"), NEW_PROJECT)
    assert response.status_code == 302
    assert Project.objects.get(slug="gamma").role_of(granted) == Membership.Role.MANAGER
