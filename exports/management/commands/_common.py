"""What the exports commands share: finding the project, with a clear error when it does not exist."""

from django.core.management.base import CommandError

from corpus.models import Project


def get_project_or_command_error(slug: str) -> Project:
    """The project with this slug, whoever asks (commands run as the operator); CommandError listing the slugs."""
    try:
        return Project.objects.get(slug=slug)
    except Project.DoesNotExist:
        known = ", ".join(Project.objects.order_by("slug").values_list("slug", flat=True)[:20]) or "none"
        raise CommandError(f"no project with slug {slug!r} (projects: {known})") from None
