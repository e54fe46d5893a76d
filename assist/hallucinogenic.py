"""Hallucinogenic selection (paper B.2): documents where at least one summary has a sentence the pre-labeler
flagged, then a seeded sample of N such documents per domain."""

import random
from dataclasses import dataclass

from django.db import transaction

from corpus.models import Project

from .llm.registry import get_backend
from .models import PreLabel


@dataclass
class Selection:
    flagged: int
    total: int
    sampled: dict[str, list[str]]

    def summary(self) -> str:
        sampled = sum(len(uids) for uids in self.sampled.values())
        return (f"{self.flagged} of {self.total} documents are hallucinogenic; sampled {sampled} "
                f"across {len(self.sampled)} domains.")


@transaction.atomic
def hallucinogenic_select(*, project: Project, per_domain: int, seed: int,
                          backend_name: str | None = None) -> Selection:
    """Mark each document hallucinogenic or not, from the current backend's successful pre-labels, and sample."""
    backend = get_backend(backend_name)
    flagged_ids = set(
        PreLabel.objects.filter(
            summary_sentence__summary__document__project=project, backend=backend.name, model=backend.model,
            status=PreLabel.Status.OK,
        ).exclude(category="no_error").values_list("summary_sentence__summary__document_id", flat=True)
    )
    documents = list(project.documents.order_by("domain", "uid").values_list("pk", "uid", "domain"))
    project.documents.update(hallucinogenic=False)
    project.documents.filter(pk__in=flagged_ids).update(hallucinogenic=True)
    by_domain: dict[str, list[str]] = {}
    for pk, uid, domain in documents:
        if pk in flagged_ids:
            by_domain.setdefault(domain, []).append(uid)
    rng = random.Random(seed)
    sampled = {domain: sorted(rng.sample(uids, min(per_domain, len(uids))))
               for domain, uids in sorted(by_domain.items())}
    return Selection(flagged=len(flagged_ids), total=len(documents), sampled=sampled)
