"""Private links: signed, expiring invitations for in-house annotators and experts (no account needed).

The link carries only the PrivateLink's id, signed with its own salt; it stops working when it expires (max_age
and the row's expires_at) or when a manager revokes it. Using it creates, or loads, the link's Annotator
(provider "link") and hands the browser a session token (tokens.py).
"""

from datetime import timedelta
from decimal import Decimal

from django.conf import settings
from django.core import signing
from django.db import transaction
from django.utils import timezone

from ..models import Annotator, PrivateLink
from .base import CrowdProvider

LINK_SALT = "finegrain.crowd.link"


def link_create(*, project, task: str, label: str, days: int | None = None, created_by=None) -> PrivateLink:
    days = min(days or settings.FINEGRAIN_LINK_MAX_AGE_DAYS, settings.FINEGRAIN_LINK_MAX_AGE_DAYS)
    return PrivateLink.objects.create(project=project, task=task, label=label, created_by=created_by,
                                      expires_at=timezone.now() + timedelta(days=days))


def link_token(link: PrivateLink) -> str:
    return signing.dumps({"l": str(link.public_id)}, salt=LINK_SALT)


def link_revoke(*, link: PrivateLink) -> PrivateLink:
    if link.revoked_at is None:
        link.revoked_at = timezone.now()
        link.save(update_fields=["revoked_at"])
    return link


def link_from_token(token: str) -> PrivateLink | None:
    """The usable link a token names; None when forged, too old, expired or revoked."""
    try:
        data = signing.loads(token, salt=LINK_SALT, max_age=timedelta(days=settings.FINEGRAIN_LINK_MAX_AGE_DAYS))
    except signing.BadSignature:
        return None
    link = PrivateLink.objects.select_related("project").filter(public_id=data.get("l")).first()
    return link if link is not None and link.is_usable() else None


@transaction.atomic
def link_annotator(*, link: PrivateLink) -> Annotator:
    link = PrivateLink.objects.select_for_update().get(pk=link.pk)
    if link.annotator_id is None:
        link.annotator = Annotator.objects.create(provider=Annotator.Provider.LINK, external_id=str(link.public_id))
        link.save(update_fields=["annotator"])
    return link.annotator


class LinkProvider(CrowdProvider):
    """In-house work: nothing to publish remotely, no platform fees; decisions are recorded, not sent."""

    name = "link"

    def fee_rate(self, assignments_per_hit: int) -> Decimal:
        return Decimal("0")

    def publish_hit(self, batch, crowd_hit, url: str) -> str:
        return ""

    def list_submissions(self, batch):
        return []
