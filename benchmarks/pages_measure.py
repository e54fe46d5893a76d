"""The measuring half of benchmarks/pages_bench.py, run in this tree's code against DATABASE_URL (a database that
`pages_bench build` made): every GET page of the URLconf as a manager, a reviewer and an annotator of the project.

The pages are enumerated from the URLconf (every named leaf pattern outside admin/ and api/: the API is not a page a
person sees, and DRF paginates it); their parameters are filled from the database by name. The annotator is an
account that did a third of the project's HITs (the first simulated annotator, turned into an account once), so its
own history is as long as the project makes it. A page that answers 405 takes POST only and is left out.

With --polled, the fragments that pages poll (the templates' `hx-trigger="every ..."`) are requested too, as htmx
requests them (an HX-Request header, the query string the template puts on the URL), by the roles whose pages poll
them (POLLED): the progress fragment, a job's fragment (the latest job, and an import job left running for the
measure and deleted after), the review list's tally state, the quality numbers' state, the analytics figures' state
and the project page's assist card; where stored numbers are one mechanism, the one view that follows them
(numbers_status) per kind, after the manager's button has opened a job where they are not current. Each answers in
the state the database is in: a finished job or current numbers answer "stop polling" (286) or a refresh, which is
the answer a page gets on its last poll; a job that is queued or running answers its state, as on every poll before
that.
"""

import argparse
import itertools
import json
import logging
import os
import sys
import time

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.db import connection  # noqa: E402
from django.db.models import Count  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402
from django.urls import NoReverseMatch, URLPattern, URLResolver, get_resolver, reverse  # noqa: E402
from django.utils import timezone  # noqa: E402

from annotation.models import Annotator, Assignment, Hit, Label, Task  # noqa: E402
from annotation.selectors import disagreements  # noqa: E402
from corpus.models import Job, Membership, Project  # noqa: E402

SLUG = "scale"
LIMIT_KB = 500
LIMIT_MS = 500
# Someone else's page (exports/): measured only when asked.
LEFT_OUT = {"exports_analytics"}
TASKS = (Task.FACT_VERIFICATION, Task.KEYFACT_VALIDATION, Task.KEYFACT_ALIGNMENT)
# The fragments pages poll (templates: hx-trigger="every ..."): pattern name -> (the query strings the templates put
# on its URL, {shown} being when the quality numbers on the page were computed; the roles whose pages poll it).
MANAGER = ("manager",)
POLLED = {"progress": ([""], MANAGER),  # annotation/progress/_progress.html, every 5 s
          "job_status": ([""], MANAGER),  # jobs/_job.html, every 2 s, on every page that lists jobs
          "review_status": (["?listed=1"], ("manager", "reviewer")),  # annotation/review/_tally.html, every 2 s
          "quality_numbers_status": (["?shown={shown}"], MANAGER),  # annotation/quality/_numbers_state.html, 3 s
          "exports_analytics_status": (["", "?simulated=1"], MANAGER),  # exports/_figures_pending.html, every 2 s
          "project_detail": (["?part=assist"], MANAGER)}  # assist/_card.html, every 2 s
# Where stored numbers are one mechanism, one view (numbers_status, jobs/_numbers.html, every 2 s) follows each kind
# while its job runs: (kind, variant, the roles whose pages poll it).
NUMBERS = (("review_tally", "", ("manager", "reviewer")), ("quality", "", MANAGER), ("analytics", "", MANAGER),
           ("analytics", "simulated", MANAGER))
HTMX = {"HX-Request": "true"}


def named_patterns(patterns=None, prefix="") -> list[tuple[str, list[str]]]:
    """(name, parameter names) of every named leaf pattern outside admin/ and api/."""
    found = []
    for entry in get_resolver().url_patterns if patterns is None else patterns:
        route = prefix + str(entry.pattern)
        if route.startswith(("admin/", "api/")):
            continue
        if isinstance(entry, URLResolver):
            found += named_patterns(entry.url_patterns, route)
        elif isinstance(entry, URLPattern) and entry.name:
            found.append((entry.name, list(entry.pattern.converters) if hasattr(entry.pattern, "converters") else []))
    return found


def user(username: str, role: str | None, project: Project):
    person, _ = get_user_model().objects.get_or_create(username=username)
    if role:
        Membership.objects.get_or_create(project=project, user=person, defaults={"role": role})
    return person


def bench_annotator(project: Project):
    """An account holding the first simulated annotator's work (converted once: an in-house annotator who did a
    third of every HIT)."""
    person = user("pages-annotator", Membership.Role.ANNOTATOR, project)
    annotator = Annotator.objects.filter(user=person).first()
    if annotator is None:
        annotator = Annotator.objects.filter(provider=Annotator.Provider.SIMULATED).order_by("pk").first()
        annotator.provider, annotator.external_id, annotator.user = Annotator.Provider.ACCOUNT, str(person.pk), person
        annotator.save()
    return person, annotator


def values(project: Project, annotator: Annotator) -> dict[tuple[str, str], object]:
    """(pattern name or '*', parameter) -> value; the largest object where size matters."""
    biggest_hit = (Hit.objects.filter(project=project).annotate(n=Count("units")).order_by("-n", "pk").first())
    own = (Assignment.objects.filter(annotator=annotator, hit__project=project).annotate(n=Count("hit__units"))
           .order_by("-n", "pk").first())
    document = project.documents.order_by("-word_count", "pk").first()
    unit = first_split_unit(project)
    job = Job.objects.filter(project=project).order_by("-pk").first()
    found = {("*", "slug"): project.slug, ("*", "task"): Task.FACT_VERIFICATION,
             ("*", "hit_id"): biggest_hit and biggest_hit.public_id,
             ("*", "annotator_id"): annotator.public_id,
             ("*", "assignment_id"): own and own.public_id,
             ("document_detail", "pk"): document and document.pk,
             ("job_status", "pk"): job and job.pk,
             ("*", "unit_id"): unit and unit.public_id}
    return {key: value for key, value in found.items() if value is not None}


def first_split_unit(project: Project):
    """The first unit of the reviewer's list: from the stored tally where the code keeps one (the live computation
    reads every counted label)."""
    try:
        from annotation.selectors import split_units
    except ImportError:
        return next(iter(disagreements(project, Task.FACT_VERIFICATION)[:1]), None)
    row = split_units(project, Task.FACT_VERIFICATION).first()
    return row and row.unit


def compute_stored_numbers(project: Project) -> list[dict] | None:
    """Where stored numbers are one mechanism (corpus.snapshots.numbers_update: the manager's button; numbers_run:
    the worker), bring the review list and the quality numbers up to date once before measuring, timed, as the
    button and a worker would; None on older code (tally_review and store_quality_numbers then do it)."""
    try:
        from corpus.snapshots import numbers_run, numbers_update
    except ImportError:
        return None
    lines = []
    for code in ("review_tally", "quality"):
        begun = time.perf_counter()
        job = numbers_update(project, code)
        if job is not None:
            numbers_run(job_id=job.pk)
        lines.append({"step": code, "seconds": round(time.perf_counter() - begun, 2), "already_current": job is None})
    return lines


def tally_review(project: Project) -> dict | None:
    """Where the code tallies the reviewer's list in a job (annotation.services.review_tally), run the job's work
    once before measuring, timed: the pages then read a current tally, as they do once the worker has run."""
    try:
        from annotation.services.review_tally import review_tally_compute
    except ImportError:
        return None
    begun = time.perf_counter()
    review_tally_compute(project)
    return {"step": "review_tally", "seconds": round(time.perf_counter() - begun, 2)}


def store_quality_numbers(project: Project) -> dict | None:
    """Where the code shows the quality pages' numbers from a job (annotation.quality.numbers), run that job once
    before measuring, timed: the pages then read current numbers, as they do once the worker has run."""
    try:
        from annotation.quality.numbers import KIND
        from corpus.snapshots import snapshot_run, snapshot_state
    except ImportError:
        return None
    state = snapshot_state(project, KIND)
    if state.job is None:
        return {"step": "quality_numbers", "seconds": 0.0, "already_current": True}
    begun = time.perf_counter()
    snapshot_run(job_id=state.job.pk)
    return {"step": "quality_numbers", "seconds": round(time.perf_counter() - begun, 2)}


def variants(name: str, project: Project, annotator: Annotator, which: str) -> list[str]:
    """Query strings a page is measured with besides its plain URL: the review page per task (`tasks`), and per task
    with each of its filters and a page deep in the list (`all`)."""
    if name != "review" or which == "none":
        return [""]
    queries = [f"?task={task}" for task in TASKS]
    if which == "tasks":
        return queries
    domain = project.documents.order_by("domain").values_list("domain", flat=True).first()
    model = (project.documents.filter(summaries__isnull=False).order_by("summaries__model")
             .values_list("summaries__model", flat=True).first())
    for task in TASKS:
        queries += [f"?task={task}&{query}" for query in (
            f"domain={domain}", f"summarizer={model}", f"annotator={annotator.public_id}", "agreement=0.5",
            "settled=no", "checks=missed", "checks=clean", "page=50")]
    return queries


def fill(name: str, parameters: list[str], known: dict) -> str | None:
    kwargs = {}
    for parameter in parameters:
        value = known.get((name, parameter), known.get(("*", parameter)))
        if value is None:
            return None
        kwargs[parameter] = value
    try:
        return reverse(name, kwargs=kwargs)
    except NoReverseMatch:
        return None


def percentile(samples: list[float], share: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, max(0, int(round(share * len(ordered) + 0.5)) - 1))]


def running_import(project: Project) -> Job:
    """An import job as a manager's upload leaves it while the worker reads the file: what job_status answers on
    every poll until it ends."""
    return Job.objects.create(project=project, kind="import", status=Job.Status.RUNNING, started=timezone.now(),
                              progress=project.documents.count() // 2, total=project.documents.count(),
                              params={"filename": "scale.jsonl"}, message="Writing documents")


def measure_polled(people: dict, project: Project, known: dict, only: set, repeat: int) -> list[dict]:
    """Each polled fragment as each role whose pages poll it, requested as htmx requests it; a job_status row for
    the latest job and one for an import job left running (deleted after)."""
    names = {name for name, _ in named_patterns()}
    shown = ""
    if "quality_numbers_status" in names:
        from annotation.quality.numbers import quality_numbers

        computed = quality_numbers(project).computed
        shown = computed.isoformat() if computed else ""
    running = running_import(project)
    rows = []
    try:
        for name, parameters in named_patterns():
            if name not in POLLED or (only and name not in only):
                continue
            queries, roles = POLLED[name]
            jobs = [known.get(("job_status", "pk")), running.pk] if name == "job_status" else [None]
            for job, query, role in itertools.product(jobs, queries, roles):
                person = people[role]
                url = fill(name, parameters, {**known, ("job_status", "pk"): job} if job else known)
                if url is None:
                    continue
                client = Client()
                client.force_login(person)
                row = {"page": name, "role": role, "polled": True, "query": query,
                       **measure(client, url + query.format(shown=shown), repeat, headers=HTMX)}
                if name == "job_status":
                    row["job"] = "running import" if job == running.pk else "latest job"
                rows.append(row)
                print(json.dumps(row), flush=True)
        if "numbers_status" in names and (not only or "numbers_status" in only):
            rows += measure_numbers_status(people, project, repeat)
    finally:
        running.delete()
    return rows


def measure_numbers_status(people: dict, project: Project, repeat: int) -> list[dict]:
    """numbers_status for each kind of stored numbers, after the manager's button (numbers_update): a job is open,
    and the fragment polls, wherever the numbers are not current; where they are, the poll answers its last (286)."""
    from urllib.parse import urlencode

    from corpus.snapshots import numbers_state, numbers_update

    rows = []
    for code, variant, roles in NUMBERS:
        numbers_update(project, code, variant)
        state = numbers_state(project, code, variant)
        query = "?" + urlencode({"variant": variant, "shown": state.computed.isoformat() if state.computed else ""})
        url = reverse("numbers_status", kwargs={"slug": project.slug, "kind": code}) + query
        for role in roles:
            client = Client()
            client.force_login(people[role])
            row = {"page": "numbers_status", "role": role, "polled": True, "query": f"?variant={variant}&shown=…",
                   "job": f"{code}{' ' + variant if variant else ''}, {'job open' if state.running else 'current'}",
                   **measure(client, url, repeat, headers=HTMX)}
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def measure(client: Client, url: str, repeat: int, headers: dict | None = None) -> dict:
    times = []
    while True:
        with CaptureQueriesContext(connection) as captured:
            begun = time.perf_counter()
            response = client.get(url, headers=headers)
            body = b"".join(response.streaming_content) if response.streaming else response.content
            times.append(time.perf_counter() - begun)
        # A refusal is not timed further; a page slower than 5 s is read 3 times, not `repeat`.
        if response.status_code not in (200, 286) or len(times) >= (3 if times[0] > 5 else repeat):
            break
    status, size = response.status_code, len(body)
    p50, p99 = percentile(times, 0.5) * 1000, percentile(times, 0.99) * 1000
    return {"url": url, "status": status, "n": len(times), "p50_ms": round(p50, 1), "p99_ms": round(p99, 1),
            "kb": round(size / 1024, 1), "queries": len(captured.captured_queries),
            "over": status in (200, 286) and (p99 > LIMIT_MS or size / 1024 > LIMIT_KB)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--only", default="", help="comma-separated pattern names")
    parser.add_argument("--include-analytics", action="store_true")
    parser.add_argument("--out")
    parser.add_argument("--variants", choices=["all", "tasks", "none"], default="all",
                        help="the review page's query strings: per task and filter, per task, or the plain URL only")
    parser.add_argument("--polled", action="store_true",
                        help="also the fragments pages poll, requested as htmx requests them (POLLED)")
    args = parser.parse_args()
    settings.ALLOWED_HOSTS = ["*"]
    logging.getLogger("django.request").setLevel(logging.CRITICAL)  # the refusals are expected, and reported
    project = Project.objects.get(slug=SLUG)
    people = {"manager": user("pages-manager", Membership.Role.MANAGER, project),
              "reviewer": user("pages-reviewer", Membership.Role.REVIEWER, project)}
    people["annotator"], annotator = bench_annotator(project)
    only = {name for name in args.only.split(",") if name}
    stored = compute_stored_numbers(project)
    for line in stored or []:
        print(json.dumps(line), flush=True)
    if stored is None and (not only or "review" in only):
        tallied = tally_review(project)
        if tallied:
            print(json.dumps(tallied), flush=True)
    if stored is None and (not only or only & {"quality_dashboard", "annotator_quality", "annotator_list"}):
        stored = store_quality_numbers(project)
        if stored:
            print(json.dumps(stored), flush=True)
    known = values(project, annotator)
    facts = {"engine": connection.vendor, "documents": project.documents.count(),
             "hits": Hit.objects.filter(project=project).count(),
             "assignments": Assignment.objects.filter(hit__project=project).count(),
             "annotator_assignments": Assignment.objects.filter(annotator=annotator).count(),
             "labels": Label.objects.filter(unit__hit__project=project).count()}
    print(json.dumps({"facts": facts}), flush=True)
    rows = []
    for name, parameters in named_patterns():
        if (only and name not in only) or (name in LEFT_OUT and not args.include_analytics):
            continue
        url = fill(name, parameters, known)
        if url is None:
            row = {"page": name, "role": "-", "skipped": f"nothing in the database to fill {parameters}"}
            rows.append(row)
            print(json.dumps(row), flush=True)
            continue
        for query, (role, person) in itertools.product(variants(name, project, annotator, args.variants),
                                                       people.items()):
            client = Client()
            client.force_login(person)
            row = {"page": name, "role": role, **measure(client, url + query, args.repeat)}
            if row["status"] == 405:
                continue
            rows.append(row)
            print(json.dumps(row), flush=True)
    if args.polled:
        rows += measure_polled(people, project, known, only, args.repeat)
    if args.out:
        with open(args.out, "w") as out:
            json.dump({"facts": facts, "rows": rows}, out, indent=1)
    print(table(rows), file=sys.stderr)


def table(rows: list[dict]) -> str:
    lines = ["| page | role | status | p50 ms | p99 ms | KB | queries | n | flag |", "| --- | --- | --- | --- | --- |"
             " --- | --- | --- | --- |"]
    for row in rows:
        if "skipped" in row:
            lines.append(f"| {row['page']} | - | skipped: {row['skipped']} | | | | | | |")
            continue
        timed = row["status"] in (200, 286)
        lines.append(f"| {label(row)} | {row['role']} | {row['status']} | "
                     f"{row['p50_ms'] if timed else ''} | {row['p99_ms'] if timed else ''} | {row['kb']} | "
                     f"{row['queries']} | {row['n']} | {'OVER' if row['over'] else ''} |")
    return "\n".join(lines)


def label(row: dict) -> str:
    """The page's name, its query string, and whether it is a polled fragment (and which job's)."""
    url = row.get("url", "")
    query = f" `{url[url.index('?'):]}`" if "?" in url else ""
    polled = f" (polled{', ' + row['job'] if 'job' in row else ''})" if row.get("polled") else ""
    return f"{row['page']}{query}{polled}"


if __name__ == "__main__":
    main()
