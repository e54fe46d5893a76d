"""Who a pseudonym is, for the people who run an in-house project.

Pages, exports and the crowd know annotators by pseudonym only. A manager or reviewer of an in-house study also
needs to know whom the quality page means when it says `ann-546b0ffc72` is too fast, so beside the pseudonym of an
annotator who works through an account, they see the account's username (managers with a link to People). Crowd
workers (MTurk, Prolific, private links) stay pseudonymous on every page: their platform identity is theirs.
"""

from django import template
from django.urls import reverse
from django.utils.html import format_html

from corpus.access import role_in
from corpus.models import Membership

from ..models import Annotator

register = template.Library()


@register.simple_tag(takes_context=True)
def person(context, annotator: Annotator, project=None) -> str:
    """The pseudonym, with `person_name` beside it."""
    return format_html("<code>{}</code>{}", annotator.pseudonym, person_name(context, annotator, project))


@register.simple_tag(takes_context=True)
def person_name(context, annotator: Annotator, project=None) -> str:
    """For a manager or reviewer of `project`, the username of an in-house annotator (managers: a link to People);
    nothing otherwise. Views pass annotators with `user` selected, so a list costs no query per row; the viewer's
    role is read once a page."""
    project = project or context.get("project")
    request = context.get("request")
    if (annotator.provider != Annotator.Provider.ACCOUNT or annotator.user_id is None or project is None
            or request is None):
        return ""
    roles = context.render_context.setdefault("people_roles", {})
    if project.pk not in roles:
        roles[project.pk] = role_in(project, request.user)
    role = roles[project.pk]
    if role == Membership.Role.MANAGER:
        link = reverse("people", args=[project.slug]) + f"#person-{annotator.user_id}"
        return format_html(' <a class="person" href="{}" title="Who this is, on People">{}</a>', link,
                           annotator.user.username)
    if role == Membership.Role.REVIEWER:
        return format_html(' <span class="person">{}</span>', annotator.user.username)
    return ""
