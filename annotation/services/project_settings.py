"""Changing a project's protocol settings, also once annotation has started, without corrupting labels given.

What may change, and when (each refusal says why in the manager's words):
- annotators per unit may always rise (HITs reopen for more labels); it may fall only before any HIT has started,
  since a unit would otherwise count more labels than the project asks for;
- the highlight fraction may not change while someone holds a HIT: the highlights they see would no longer be what
  the project says they saw (HITs already answered keep the highlights they showed, stored with each unit);
- the assistance level may not change once a HIT that follows the project's level has started: its labels were
  given under the old level (use a HIT's own level, or the ablation, to compare levels);
- everything else (pay, bonuses, checks for HITs built later, the quality policy for submissions graded later,
  reservations, screening) applies from now on and leaves what is stored as it is.
"""

from django.db import transaction
from django.utils import timezone

from corpus.models import Project

from ..models import Assignment, Hit
from ..selectors import started_hits


class SettingsRefused(Exception):
    def __init__(self, errors: dict[str, str]):
        self.errors = errors
        super().__init__("; ".join(f"{name}: {message}" for name, message in errors.items()))


def change_refusals(current: Project, new: Project) -> dict[str, str]:
    """Field name -> why it may not change from `current` to `new` now; empty when every change may be made."""
    errors = {}
    hits = Hit.objects.filter(project=current)
    if new.annotators_per_unit < current.annotators_per_unit and started_hits(hits).exists():
        errors["annotators_per_unit"] = (
            f"Annotators per unit can rise but not fall below {current.annotators_per_unit} once annotation has "
            "started: units already labelled would count more labels than the project asks for.")
    if new.highlight_fraction != current.highlight_fraction and Assignment.objects.filter(
            hit__project=current, status=Assignment.Status.RESERVED, expires_at__gt=timezone.now()).exists():
        errors["highlight_fraction"] = (
            "The highlight fraction cannot change while someone holds a HIT: what they see would no longer match "
            "the project. Try again when no HIT is reserved.")
    if new.assistance != current.assistance and started_hits(hits.filter(assistance="")).exists():
        errors["assistance"] = (
            f"The assistance level cannot change once HITs at the project's level ({current.get_assistance_display()}) "
            "have started: their labels were given with it. Set a level on single HITs, or run the ablation, to "
            "compare levels.")
    return errors


def update_settings(project: Project, new: Project, fields: list[str]) -> Project:
    """Save `fields` of `new` onto the project, all or nothing, if `change_refusals` allows every change; checked
    under the project's row lock, so that a HIT started meanwhile is seen (SettingsRefused otherwise)."""
    with transaction.atomic():
        current = Project.objects.select_for_update().get(pk=project.pk)
        if errors := change_refusals(current, new):
            raise SettingsRefused(errors)
        for name in fields:
            setattr(current, name, getattr(new, name))
        current.save(update_fields=fields)
        return current
