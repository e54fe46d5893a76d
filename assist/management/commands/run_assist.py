import time

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from assist.llm.base import BackendError
from assist.llm.registry import get_backend
from assist.pipeline import STEPS
from assist.runs import assist_start, job_create, job_run_document
from corpus.models import Job, JobAlreadyOpen, Project


class Command(BaseCommand):
    help = (
        "Run the AI assistance for a project: sentence embeddings and contextual mapping, pre-labels with reasons, "
        "and key-fact generation with voting. Work already done and current is skipped."
    )

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True, help="project slug")
        parser.add_argument("--steps", default=",".join(STEPS), help=f"comma-separated, from: {', '.join(STEPS)}")
        parser.add_argument("--queue", action="store_true",
                            help="send the work to Celery workers and follow the job's progress")

    def handle(self, *args, project: str, steps: str, queue: bool, verbosity: int, **options):
        try:
            target = Project.objects.get(slug=project)
        except Project.DoesNotExist:
            raise CommandError(f"no project with slug {project!r}") from None
        chosen = tuple(step.strip() for step in steps.split(",") if step.strip())
        try:
            backend = get_backend()
        except (BackendError, ValueError) as exc:
            raise CommandError(f"the LLM backend is misconfigured: {exc}") from None
        self.stdout.write(f"Backend: {backend.name} ({backend.model})")
        try:
            job = (assist_start if queue else job_create)(project=target, steps=chosen)
        except (ValueError, JobAlreadyOpen) as exc:
            raise CommandError(str(exc)) from None
        bar = tqdm(total=job.total, desc="assist", unit="doc", disable=verbosity < 1, file=self.stderr._out)
        if queue:
            while not job.is_finished:
                time.sleep(0.5)
                job.refresh_from_db()
                bar.update(job.progress - bar.n)
        else:
            for document_id in target.documents.values_list("pk", flat=True):
                try:
                    job_run_document(job.pk, document_id)
                except Exception:  # recorded on the job; go on with the next document
                    pass
                bar.update(1)
            job.refresh_from_db()
        bar.close()
        result = job.result
        for note in result.get("notes", []):
            self.stdout.write(self.style.WARNING(note))
        summary = (
            f"{result['embedded_documents']} documents embedded, {result['mapped']} targets mapped, "
            f"{result['prelabeled']} sentences pre-labeled ({result['prelabel_failures']} failed), "
            f"{result['keyfacts_generated']} key-facts generated."
        )
        if job.status == Job.Status.FAILED:
            raise CommandError(f"{summary}\n{job.error}")
        self.stdout.write(self.style.SUCCESS(summary))
