"""A project's people: invitations, accounts made on the spot, roles, removal and the audit list; tried by the
manager, a reviewer, an annotator, an outsider and anonymous."""

import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse
from django.utils import timezone

from corpus.models import Invitation, Membership, MembershipEvent, PasswordChangeRequired

pytestmark = pytest.mark.django_db


def change(client, project, **data):
    return client.post(reverse("people_change", args=[project.slug]), data)


def invitation_link(client, project, role="annotator", label="Anna") -> str:
    page = change(client, project, action="invite", role=role, label=label).content.decode()
    return re.search(r'<code class="copy">https?://[^/]+(/invitation/[^<]+/)</code>', page)[1]


def test_only_the_projects_managers_open_or_change_its_people(client, project, manager, annotator, other_annotator,
                                                              outsider, django_user_model):
    reviewer = django_user_model.objects.create_user("rev")
    Membership.objects.create(project=project, user=reviewer, role=Membership.Role.REVIEWER)
    page, changes = reverse("people", args=[project.slug]), reverse("people_change", args=[project.slug])
    assert client.get(page).status_code == 302 and client.post(changes, {"action": "invite"}).status_code == 302
    for user, status in ((annotator, 403), (reviewer, 403), (other_annotator, 403), (outsider, 404)):
        client.force_login(user)
        assert client.get(page).status_code == status
        assert change(client, project, action="invite", role="manager", label="me").status_code == status
        assert change(client, project, action="create", role="manager", username="sneaky").status_code == status
    assert not Invitation.objects.exists() and not django_user_model.objects.filter(username="sneaky").exists()
    client.force_login(manager)
    assert client.get(page).status_code == 200


def test_an_invitation_link_makes_the_account_on_first_use_and_works_once(client, project, manager):
    client.force_login(manager)
    link = invitation_link(client, project, role="reviewer", label="Reviewer <b>Anna</b>")
    assert Invitation.objects.get().token_sha256 not in link  # Only the hash is stored.
    client.logout()
    form = client.get(link).content.decode()
    assert "You are invited as <strong>reviewer</strong>" in form
    response = client.post(link, {"username": "anna", "password1": "a-long-pass-phrase-9", "password2":
                                  "a-long-pass-phrase-9"}, follow=True)
    assert response.redirect_chain[-1][0] == reverse("project_detail", args=[project.slug])
    anna = get_user_model().objects.get(username="anna")
    assert Membership.objects.get(project=project, user=anna).role == "reviewer"
    assert response.context["user"] == anna
    client.logout()
    assert client.get(link).status_code == 410
    assert client.post(link, {"username": "again", "password1": "x-long-pass-9", "password2": "x-long-pass-9"}) \
        .status_code == 410
    assert not get_user_model().objects.filter(username="again").exists()
    client.force_login(manager)
    audit = client.get(reverse("people", args=[project.slug])).content.decode()
    assert "invited <strong>Reviewer &lt;b&gt;Anna&lt;/b&gt;</strong> as reviewer." in audit
    # Anna acts here: her name comes once, as the subject of the sentence.
    assert "<strong>anna</strong> joined as reviewer (Reviewer &lt;b&gt;Anna&lt;/b&gt;) through an invitation." in audit
    assert "anna joined through an invitation" not in audit


def test_a_logged_in_person_joins_once_and_a_bad_sign_up_writes_nothing(client, project, manager, outsider):
    client.force_login(manager)
    link = invitation_link(client, project)
    client.logout()
    response = client.post(link, {"username": "x y", "password1": "short", "password2": "other"})
    assert response.status_code == 400 and not get_user_model().objects.filter(username="x y").exists()
    assert Invitation.objects.get().used_at is None
    client.force_login(outsider)
    assert client.post(link).status_code == 302
    assert Membership.objects.get(project=project, user=outsider).role == "annotator"
    client.force_login(manager)
    second = invitation_link(client, project, label="again")
    client.force_login(outsider)
    response = client.post(second)
    assert response.status_code == 409 and "already a member" in response.content.decode()
    assert Invitation.objects.get(label="again").used_at is None


def test_expired_and_revoked_invitations_do_not_work(client, project, manager):
    client.force_login(manager)
    first, second = invitation_link(client, project, label="a"), invitation_link(client, project, label="b")
    Invitation.objects.filter(label="a").update(expires_at=timezone.now() - timedelta(seconds=1))
    change(client, project, action="revoke", invitation=Invitation.objects.get(label="b").pk)
    client.logout()
    for link in (first, second):
        response = client.get(link)
        assert response.status_code == 410 and "was used, revoked or has expired" in response.content.decode()
    assert client.get("/invitation/made-up-token/").status_code == 410


def test_an_account_made_on_the_spot_must_choose_its_password_first(client, project, manager):
    client.force_login(manager)
    page = change(client, project, action="create", username="bea", role="annotator").content.decode()
    password = re.search(r'one-time password <code class="copy">([^<]+)</code>', page)[1]
    client.logout()
    assert client.post(reverse("login"), {"username": "bea", "password": password}).status_code == 302
    response = client.get(reverse("work_home"))
    assert response.status_code == 302 and response.url == reverse("password_change")
    response = client.post(reverse("password_change"), {"old_password": password, "new_password1": "bea-own-pass-77",
                                                        "new_password2": "bea-own-pass-77"})
    assert response.status_code == 302 and not PasswordChangeRequired.objects.exists()
    assert client.get(reverse("work_home")).status_code == 200
    client.logout()
    assert client.login(username="bea", password="bea-own-pass-77")


@pytest.mark.parametrize("username, message", [
    ("has space", "A username is 1 to 150 letters, digits and @ . + - _"),
    ("mia", "The username &#x27;mia&#x27; is taken"),
])
def test_a_bad_or_taken_username_is_refused_and_nothing_is_made(client, project, manager, username, message):
    client.force_login(manager)
    response = change(client, project, action="create", username=username, role="annotator")
    assert response.status_code == 400 and message in response.content.decode()
    assert not PasswordChangeRequired.objects.exists()


def test_roles_change_and_people_leave_but_the_project_keeps_a_manager(client, project, manager, annotator):
    client.force_login(manager)
    mine = Membership.objects.get(project=project, user=manager)
    response = change(client, project, action="role", member=mine.pk, role="annotator")
    assert response.status_code == 400 and "A project needs a manager" in response.content.decode()
    assert change(client, project, action="remove", member=mine.pk).status_code == 400
    theirs = Membership.objects.get(project=project, user=annotator)
    assert change(client, project, action="role", member=theirs.pk, role="manager").status_code == 302
    assert change(client, project, action="role", member=mine.pk, role="reviewer").status_code == 302
    assert Membership.objects.get(pk=mine.pk).role == "reviewer"
    client.force_login(annotator)
    assert change(client, project, action="remove", member=mine.pk).status_code == 302
    assert not Membership.objects.filter(pk=mine.pk).exists()
    assert list(MembershipEvent.objects.order_by("pk").values_list("action", "subject")) == [
        ("role_changed", annotator.username), ("role_changed", manager.username), ("removed", manager.username)]
    client.force_login(theirs.user)
    audit = client.get(reverse("people", args=[project.slug])).content.decode()
    assert f"{annotator.username} removed <strong>{manager.username}</strong>, who was reviewer." in audit
    assert change(client, project, action="role", member=999999, role="manager").status_code == 404
    assert change(client, project, action="role", member=theirs.pk, role="owner").status_code == 400


def test_a_reviewer_reads_the_hits_and_their_labels_but_changes_nothing(client, project, manager, django_user_model):
    from annotation.models import Hit
    from tests.work import build_all, import_small

    import_small(project)
    build_all(project)
    reviewer = django_user_model.objects.create_user("rev")
    Membership.objects.create(project=project, user=reviewer, role=Membership.Role.REVIEWER)
    client.force_login(reviewer)
    hit = Hit.objects.filter(project=project).first()
    listing = client.get(reverse("hit_list", args=[project.slug]))
    detail = client.get(reverse("hit_detail", args=[project.slug, hit.public_id]))
    assert listing.status_code == 200 and "Assistance ablation" not in listing.content.decode()
    assert detail.status_code == 200 and "hit_assistance" not in detail.content.decode()
    assert 'action="/projects/alpha/hits/' not in detail.content.decode()
    for url in (reverse("progress", args=[project.slug]), reverse("project_settings", args=[project.slug])):
        assert client.get(url).status_code == 403
    assert client.post(reverse("hits_build", args=[project.slug]), {"task": "fv"}).status_code == 403
    assert client.post(reverse("hit_assistance", args=[project.slug, hit.public_id]),
                       {"assistance": "none"}).status_code == 403
