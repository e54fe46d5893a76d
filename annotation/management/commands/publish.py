import time

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from annotation.crowd.publishing import plan_publish, publish, publish_queue, publishing_is_queued
from annotation.crowd.registry import NAMES, closure_notice, get_provider
from annotation.models import CrowdBatch, Provider, Task
from corpus.models import Project


class Command(BaseCommand):
    help = ("Publish a task's HITs on MTurk, Prolific or as private-link work. Prints exactly what would be "
            "created and what it costs, then asks for confirmation (--yes skips it; --dry-run stops there). "
            "An interrupted run is resumed by running the command again: nothing is created twice. With a Redis "
            "broker (CELERY_BROKER_URL) the HITs are created by the crowd workers, one task per HIT, and the command "
            "follows their progress (--no-wait returns once they are queued).")

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True, help="project slug")
        parser.add_argument("--task", required=True, choices=Task.values)
        parser.add_argument("--provider", required=True, choices=NAMES,
                            help="prolific or link (mturk closed on 2026-09-30; kept for what it published)")
        parser.add_argument("--sandbox", action="store_true",
                            help="MTurk's sandbox (no money moves); Prolific and private links have none")
        parser.add_argument("--dry-run", action="store_true", help="print the plan and the cost, create nothing")
        parser.add_argument("--yes", action="store_true", help="publish without asking")
        parser.add_argument("--no-wait", action="store_true",
                            help="with a broker: return once the HITs are queued for the crowd workers")

    def handle(self, *args, project, task, provider, sandbox, dry_run, yes, verbosity, no_wait=False, **options):
        target = Project.objects.filter(slug=project).first()
        if target is None:
            raise CommandError(f"no such project: {project!r}")
        impl = get_provider(provider, sandbox=sandbox)
        label = Provider(provider).label
        if sandbox and not impl.has_sandbox:
            raise CommandError(f"{label} has no sandbox (only MTurk has one): what is published there is real. "
                               "Leave out --sandbox; --dry-run shows what would be sent and sends nothing.")
        if notice := closure_notice(provider):
            self.stderr.write(notice)
        plan = plan_publish(project=target, task=task, provider=provider, sandbox=sandbox)
        estimate = plan.estimate.as_dict()
        self.stdout.write(f"{target.slug}: {len(plan.items)} {task} HITs to publish on {provider}"
                          f"{' (sandbox)' if sandbox else ''}.")
        for line in impl.describe(plan):
            self.stdout.write(f"  {line}")
        self.stdout.write(
            f"Cost: {estimate['assignments']} assignments x {estimate['reward_usd']} USD = {estimate['rewards']}"
            f" + fees {estimate['reward_fees']} ({estimate['fee_rate']}) + expected bonuses {estimate['bonuses']}"
            f" ({estimate['expected_bonuses']}) + their fees {estimate['bonus_fees']}"
            f" = {estimate['total']} USD" + (" (MTurk's sandbox: nothing is paid)" if sandbox else ""))
        for problem in plan.problems:
            self.stderr.write(f"Problem: {problem}")
        if dry_run:
            where = "" if provider == "link" else f"nothing was sent to {label} and "
            self.stdout.write(f"Dry run: {where}nothing was created.")
        if plan.problems:  # a dry run too exits non-zero: the plan it shows could not be published
            raise CommandError("cannot publish: " + " ".join(plan.problems))
        if dry_run:
            return
        if not plan.items:
            self.stdout.write("Nothing to publish.")
            return
        if not yes:
            answer = input(f"Publish {len(plan.items)} HITs for up to {estimate['total']} USD? [y/N] ")
            if answer.strip().lower() not in ("y", "yes"):
                raise CommandError("not confirmed; nothing was created")
        if publishing_is_queued():
            batch = publish_queue(plan=plan)
            self.stdout.write(f"Queued {len(plan.items)} HITs of batch {batch.public_id} for the crowd workers.")
            if not no_wait:
                self.follow(batch, len(plan.items), verbosity)
            return
        bar = tqdm(total=len(plan.items), desc="publishing", unit="HIT", disable=verbosity < 1,
                   file=self.stderr._out)
        try:
            batch = publish(plan=plan, provider=impl, progress=bar.update)
        except Exception as error:
            raise CommandError(f"publishing stopped ({error}); run the command again to resume") from error
        finally:
            bar.close()
        self.stdout.write(self.style.SUCCESS(f"Published batch {batch.public_id} ({batch.crowd_hits.count()} HITs)."))

    def follow(self, batch: CrowdBatch, total: int, verbosity: int) -> None:
        """Show the crowd workers' progress from the CrowdHit rows until the batch is published or stuck."""
        self.stdout.write("Waiting for the crowd workers (Ctrl-C stops waiting, not publishing).")
        bar = tqdm(total=total, desc="publishing", unit="HIT", disable=verbosity < 1, file=self.stderr._out)
        try:
            while True:
                batch.refresh_from_db(fields=["status"])
                pending = batch.crowd_hits.filter(published_at__isnull=True)
                bar.update(max(0, total - pending.count() - bar.n))
                if batch.status != CrowdBatch.Status.PUBLISHING:
                    break
                refused = pending.exclude(failed_at=None)
                if pending.exists() and not pending.filter(failed_at=None).exists():
                    raise CommandError(f"{refused.count()} HITs were refused ({refused.first().last_error}); "
                                       "run the command again to retry them")
                time.sleep(1)
        except KeyboardInterrupt:
            raise CommandError("stopped waiting; the crowd workers go on publishing") from None
        finally:
            bar.close()
        self.stdout.write(self.style.SUCCESS(f"Published batch {batch.public_id} ({batch.crowd_hits.count()} HITs)."))
