"""A project's people page (managers: members and roles, invitations, accounts made on the spot, the audit list)
and the invitation page a new member opens."""

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import UserCreationForm
from django.db import transaction
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from corpus import people
from corpus.access import get_managed_project
from corpus.models import Invitation, Membership

from .pagination import paginate

AUDIT_LENGTH = 50
MEMBERS_PER_PAGE = 50
INVITATIONS_PER_PAGE = 50


@login_required
def people_page(request, slug, status=200, **extra):
    project = get_managed_project(request.user, slug)
    members, members_query = paginate(request, project.memberships.select_related("user")
                                      .order_by("role", "user__username", "pk"), MEMBERS_PER_PAGE)
    invitations, invitations_query = paginate(
        request, project.invitations.filter(used_at__isnull=True, revoked_at__isnull=True)
        .select_related("created_by").order_by("-created", "-pk"), INVITATIONS_PER_PAGE, "invitations_page")
    return render(request, "annotation/people.html", {
        "project": project,
        "members": members, "members_query": members_query,
        "invitations": invitations, "invitations_query": invitations_query,
        "events": project.membership_events.select_related("actor")[:AUDIT_LENGTH],
        "roles": Membership.Role.choices,
        **extra,
    }, status=status)


@login_required
@require_POST
def people_change(request, slug):
    """One change to the project's people, named by the form's `action`."""
    project = get_managed_project(request.user, slug)
    action, post = request.POST.get("action", ""), request.POST
    try:
        if action == "invite":
            invitation, token = people.invite(project=project, role=post.get("role", ""),
                                              label=post.get("label", ""), actor=request.user)
            link = request.build_absolute_uri(reverse("invitation", args=[token]))
            return people_page(request, slug, new_invitation={"link": link, "invitation": invitation})
        if action == "create":
            membership, password = people.create_account(project=project, username=post.get("username", ""),
                                                          role=post.get("role", ""), actor=request.user)
            return people_page(request, slug, new_account={"membership": membership, "password": password})
        if action in ("role", "remove"):
            membership = get_object_or_404(Membership, project=project, pk=_pk(post.get("member")))
            if action == "role":
                people.change_role(membership=membership, role=post.get("role", ""), actor=request.user)
                messages.success(request, f"{membership.user.get_username()} is now "
                                          f"{Membership.Role(post['role']).label.lower()}.")
            else:
                people.remove(membership=membership, actor=request.user)
                messages.success(request, f"{membership.user.get_username()} is no longer a member; their work "
                                          "stays.")
            return redirect("people", slug)
        if action == "revoke":
            invitation = get_object_or_404(Invitation, project=project, pk=_pk(post.get("invitation")))
            people.revoke(invitation=invitation, actor=request.user)
            messages.success(request, f"The invitation of {invitation.label} no longer works.")
            return redirect("people", slug)
    except people.PeopleError as refusal:
        return people_page(request, slug, status=400, error=str(refusal))
    return people_page(request, slug, status=400, error="Unknown action.")


def _pk(value) -> int:
    return int(value) if str(value or "").isdigit() and len(str(value)) < 12 else 0


def invitation_page(request, token):
    """Open to anybody with the link: sign up (or, logged in, join) as the invitation says."""
    invitation = people.open_invitation(token)
    if invitation is None:
        return render(request, "registration/invitation.html", {"invalid": True}, status=410)
    form = UserCreationForm(request.POST or None) if not request.user.is_authenticated else None
    if request.method == "POST":
        if form is not None and not form.is_valid():
            return render(request, "registration/invitation.html", {"invitation": invitation, "form": form},
                          status=400)
        try:
            with transaction.atomic():  # The account is made for this invitation only: both or neither.
                user = form.save() if form is not None else request.user
                people.accept(token=token, user=user)
        except people.PeopleError as refusal:
            return render(request, "registration/invitation.html", {"invitation": invitation, "error": str(refusal)},
                          status=409)
        if form is not None:
            login(request, user, backend=settings.AUTHENTICATION_BACKENDS[0])
        messages.success(request, f"Welcome to {invitation.project.name}.")
        return redirect(invitation.project)
    return render(request, "registration/invitation.html", {"invitation": invitation, "form": form})
