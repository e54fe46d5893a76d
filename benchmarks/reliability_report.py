"""Render the figures of the reliability suite (tests/reliability, written to benchmarks/out/reliability.json at the
end of each run) as the "Reliability" section of benchmarks/RESULTS.md.

    .venv/bin/python benchmarks/reliability_report.py            # print the section
    .venv/bin/python benchmarks/reliability_report.py --write    # replace it in benchmarks/RESULTS.md
"""

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "out" / "reliability.json"
RESULTS = HERE / "RESULTS.md"
BEGIN, END = "<!-- reliability:begin -->", "<!-- reliability:end -->"

# test name -> (what it does, the figures to show, in order)
ROWS = {
    "test_it_keeps_every_acknowledged_answer_of_50_concurrent_annotators": (
        "load: 50 annotators (threads, httpx) log in, reserve, answer, submit against gunicorn (3 workers)",
        ["requests", "requests_per_second", "answers_acknowledged", "answers_verified", "submissions_acknowledged",
         "http_5xx", "lost", "duplicates", "mean_ms"]),
    "test_it_loses_no_answer_when_web_workers_are_killed_mid_request": (
        "fault (a): gunicorn workers SIGKILLed while the same 50 annotators work; clients retry",
        ["faults_injected", "requests", "transport_errors", "retries", "answers_acknowledged", "answers_verified",
         "submissions_acknowledged", "stored_without_acknowledgement", "http_5xx", "lost", "duplicates"]),
    "test_it_processes_every_document_once_when_workers_die_mid_task": (
        "fault (b): assist run on 2 Celery workers; a pool process, then a whole worker SIGKILLed mid-task",
        ["faults_injected", "documents", "job_status", "job_progress", "redelivered_to_other_worker", "embeddings",
         "mappings", "expected_mappings", "prelabels", "expected_prelabels", "duplicates", "visibility_timeout_s"]),
    "test_crowd_sync_and_outbox_survive_postgres_and_redis_restarts": (
        "faults (c) and (d): private PostgreSQL restarted mid-sync_crowd; private Redis restarted twice with the "
        "outbox queued (MTurk via botocore Stubber)", None),
    "test_publishing_through_a_worker_creates_every_hit_once_across_redis_restarts": (
        "fault (e): `publish` through a real Celery worker (crowd queue, 2 processes); private Redis restarted twice "
        "mid-publishing, 2 MTurk answers lost (MTurk on loopback)",
        ["hits", "redis_restarts", "messages_lost_by_restarts", "answers_lost", "create_hit_calls",
         "repeated_tokens_answered_existing", "requeued_by_drains", "hits_on_provider", "crowd_hits_with_remote_id",
         "lost", "duplicates", "batch_status"]),
    "test_it_imports_fuzzed_files_or_refuses_them_with_messages_and_writes_nothing": (
        "fuzz: hypothesis JSONL/CSV files (random types, unicode, huge/empty fields, broken UTF-8; rows spoiled by "
        "NUL, lone surrogates, a value one past its column, deep nesting) into import_dataset",
        ["inputs_tried", "imported", "refused", "other_exceptions", "partial_writes", "refusals"]),
    "test_the_answer_endpoints_answer_fuzzed_requests_with_4xx_and_clear_messages_never_500": (
        "fuzz: hypothesis bodies for the answers/submit/reserve operations of /api/schema/",
        ["inputs_tried", "statuses", "http_5xx", "partial_writes"]),
    "test_every_api_operation_answers_fuzzed_requests_below_500_and_refusals_write_nothing": (
        "fuzz: every operation of /api/schema/ as a manager and an annotator, with fuzzed ids, query parameters "
        "(NUL, invalid UTF-8) and bodies (deep, NUL, lone surrogates, forms)",
        ["inputs_tried", "operations", "statuses", "http_5xx", "partial_writes"]),
    "test_xss_payloads_in_every_user_supplied_field_render_escaped_on_every_page": (
        "XSS: 3 payloads in every user-supplied field; every page a manager and an annotator reach, crawled",
        ["payloads", "manager_pages", "annotator_pages", "unescaped_found"]),
    "test_other_annotators_and_projects_work_is_refused_and_never_leaked": (
        "IDOR: another annotator and another project's manager try ids through pages and the API",
        ["attempts", "refused", "leaks"]),
    "test_a_cookie_session_post_without_csrf_token_is_refused": (
        "CSRF: cookie-session POSTs without a token", ["attempts", "refused"]),
    "test_forged_crowd_parameters_and_tampered_or_replayed_tokens_are_refused": (
        "crowd forgery: forged workerId/assignmentId/hitId, tampered and replayed signed tokens",
        ["attempts", "refused", "labels_written", "claims_added"]),
}


NOTES = """
How to read it:
- "lost" = acknowledged (2xx) answers or submissions missing from the database; "duplicates" = (annotator, unit)
  pairs with more than one Label row. Requests are counted client-side, retries included; `mean_ms` is the mean
  client-observed latency per endpoint (50 clients queue on 3 sync gunicorn workers on 2 cores, so it is mostly
  queueing; the machine was shared with other test runs, load average 7-11, so throughput here is a floor).
- The web test's gunicorn uses `tests/reliability/settings.py` (the production settings with the MD5 password
  hasher): 50 PBKDF2 log-ins at ~1 s each would use the whole time budget. Everything else is production code.
- Fault (b): the whole-worker kill relies on Redis redelivering the unacknowledged message after the transport's
  `visibility_timeout`; the test's workers use 30 s (`app.conf.broker_transport_options` on their command line),
  production uses `CELERY_VISIBILITY_TIMEOUT`, 6 hours by default (see deploy/OPERATIONS.md). The pool-process kill
  is redelivered at once (`reject_on_worker_lost`).
- Fault (c) restarts a private PostgreSQL 15 cluster (`pg_ctl -m immediate`) right after MTurk (botocore Stubber)
  approved the 2nd of 3 assignments in `sync_project`'s outbox step; the re-run recognises the approval via
  `get_assignment` and writes the ledger once. Fault (d) restarts a private redis-server (no persistence) twice
  while `drain_outbox`'s messages are queued; the queued messages are consumed by the test in-process (the body of
  the `execute_decision` task, so the Stubber-backed provider can be injected), not by a Celery worker process.
- Fault (e): `publish --no-wait` writes one row per HIT and queues one `publish_hit` task each on a private Redis; a
  real Celery worker (`tests/worker.py`) creates the HITs on a fake MTurk on loopback (`tests/crowd/mturk_server.py`,
  reached through `FINEGRAIN_MTURK_SANDBOX_ENDPOINT`: the Stubber cannot reach into another process), which honours
  UniqueRequestToken. Redis is killed and restarted twice while HITs are being created; the test then runs
  `drain_publishing` (what beat runs) every 3 s instead of 15 minutes. "lost"/"duplicates" compare the provider's
  HITs with the recorded remote ids, through the token each HIT carries.
"""


def cell(figures: dict, names: list[str] | None) -> str:
    if names is None:  # the crowd scenarios record prefixed figures
        names = [name for name in figures if "." in name]
    return "; ".join(f"{name} {figures[name]}" for name in names if name in figures)


def render(data: dict) -> str:
    tests = data.get("tests", {})
    lines = [
        "## Reliability",
        "",
        f"`{data.get('command', '')}` — {data.get('date', '')}, {data.get('machine', '')}, load average "
        f"{data.get('load_average', '?')}" + (f"; whole suite {data['suite_seconds']} s" if "suite_seconds" in data
                                                else "") + ".",
        "Rendered by `benchmarks/reliability_report.py` from `benchmarks/out/reliability.json`, which the suite "
        "(tests/reliability, all marked `services`) writes at the end of every run.",
        "",
        "| test | what | seconds | outcome | figures |",
        "| --- | --- | ---: | --- | --- |",
    ]
    for name, (what, names) in ROWS.items():
        figures = tests.get(name)
        if figures is None:
            lines.append(f"| `{name}` | {what} | | not run | |")
            continue
        lines.append(f"| `{name}` | {what} | {figures.get('seconds', '')} | {figures.get('outcome', '')} | "
                     f"{cell(figures, names).replace('|', '/')} |")
    return "\n".join(lines) + "\n" + NOTES


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true", help="replace the section in benchmarks/RESULTS.md")
    parser.add_argument("--source", type=Path, default=SOURCE)
    args = parser.parse_args()
    if not args.source.exists():
        print(f"{args.source} does not exist: run the reliability suite first", file=sys.stderr)
        return 1
    section = render(json.loads(args.source.read_text()))
    if not args.write:
        print(section)
        return 0
    text = RESULTS.read_text()
    block = f"{BEGIN}\n{section}{END}"
    if BEGIN in text and END in text:
        text = text[:text.index(BEGIN)] + block + text[text.index(END) + len(END):]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    RESULTS.write_text(text)
    print(f"wrote the Reliability section of {RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
