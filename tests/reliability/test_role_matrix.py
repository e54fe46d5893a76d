"""The role matrix: every pattern of the URLconf x every kind of caller x GET and POST, against gunicorn on
PostgreSQL with DEBUG off, with the ids of two projects crossed.

The callers: anonymous; the annotator, reviewer and manager of project A; the manager of project B only; a
private-link worker of A; a Prolific participant of A whose arrival Prolific confirmed, and one it could not confirm
(a claim); and a logged-in account carrying another person's crowd token. tests/reliability/role_matrix.py says who
may reach what; a pattern it does not name fails here. Every response, allowed or refused, is scanned: no project's
slug, name, ids or texts reach a caller outside it (in a page, a redirect or an error message), no annotator sees
another's pseudonym, and whoever annotates finds neither an attention check's marks nor the AI fields the HIT's
assistance level hides (tests/quality/leak_crawler.Oracle). No response is a 5xx.

Beside it, the attacks the matrix is there for, as whole scenarios against the same server: a forged arrival's token
used by any logged-in account or on the API, invitations reused, expired and raced, the last manager under
concurrent demotions.
"""

import itertools
import logging
import secrets
import threading
from collections import Counter
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import httpx
import pytest
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.test import Client
from django.urls import Resolver404, URLPattern, URLResolver, get_resolver, resolve
from django.utils import timezone

from annotation.crowd import claims
from annotation.crowd.links import link_annotator, link_create, link_token
from annotation.models import Annotator, Assignment, CrowdBatch, CrowdHit, Hit, Unit
from annotation.services.answers import save_answers
from annotation.services.assignment import reserve_next_hit, submit_assignment
from corpus import people
from corpus.jobs import numbers_kinds
from corpus.models import DocumentSentence, Invitation, Job, KeyFact, Membership, Project, Summary, SummarySentence
from exports.job_kinds import ANALYTICS
from tests.conftest import numbers_now
from tests.quality.conftest import with_checks
from tests.quality.leak_crawler import formats_of, leaf_patterns, oracle_for, route_of
from tests.reliability.role_matrix import Caller, Filling, expected, rule_for
from tests.work import add_assistance, annotator_for, answers_for, build_all, import_generated, import_small, qualify

from .conftest import free_port, running_gunicorn

pytestmark = [pytest.mark.services, pytest.mark.slow]

CSRF = "a" * 32  # an unmasked CSRF secret: sent as the cookie and the header, it passes Django's check
LOGIN_PATHS = ("/accounts/login/", "/admin/login/")


# --- The world ----------------------------------------------------------------------------------------------------

@dataclass
class World:
    a: Project
    b: Project
    callers: list[Caller]
    pools: dict  # parameter name -> [(value, project pk or None)]
    view_pools: dict  # view name -> {parameter name -> [(value, project pk or None)]}
    caller_pools: dict  # caller name -> {parameter name -> [(value, project pk or None, valid)]}
    strings: dict[int, list[tuple[str, str]]]  # project pk -> what names it
    pseudonyms: dict[str, str]  # annotator pseudonym -> whose


def account_cookies(user) -> dict:
    client = Client()
    client.force_login(user)
    return {"sessionid": client.cookies["sessionid"].value, "csrftoken": CSRF}


def passing(unit: Unit) -> dict:
    answers = answers_for(unit)
    check = getattr(unit, "attention_check", None)
    if check is not None:
        answers.update({k: v for k, v in check.expected.items() if k != "ai_right" or "ai_right" in answers})
        if answers.get("has_error"):
            answers["error_types"] = ["out_of_article"]
    return answers


def submitted_by(annotator: Annotator, project: Project) -> Assignment:
    assignment = reserve_next_hit(annotator, project, "fv", confirmed=True)
    save_answers(assignment=assignment, answers={unit: passing(unit) for unit in assignment.hit.units.all()})
    submit_assignment(assignment=assignment)
    return assignment


def prolific_arrival(project: Project, batch: CrowdBatch, participant: str, session: str, *, confirmed: bool,
                     monkeypatch) -> tuple[Annotator, Assignment, str]:
    annotator, _ = Annotator.objects.get_or_create(provider=Annotator.Provider.PROLIFIC, external_id=participant)
    qualify(annotator, project)
    # Prolific's answer on arrival: it confirms the session, or cannot be reached (the claim stays unconfirmed).
    monkeypatch.setattr(claims, "_prolific_session", lambda *args: confirmed)
    assignment, token = claims.prolific_arrive(batch=batch, participant_id=participant, study_id=batch.external_id,
                                               session_id=session)
    assert (assignment.confirmed_at is not None) == confirmed
    return annotator, assignment, token


def export_job(project: Project, directory: Path) -> Job:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{project.slug}.jsonl").write_text('{"uid": "x"}\n')
    return Job.objects.create(project=project, kind="export", status=Job.Status.DONE,
                              result={"files": [f"{project.slug}.jsonl"], "directory": str(directory)})


def project_strings(project: Project) -> list[tuple[str, str]]:
    """What names a project: its slug and name, its objects' public ids, and texts only it holds."""
    found = [(project.slug, "slug"), (project.name, "name")]
    hits = Hit.objects.filter(project=project)
    found += [(str(pk), "HIT id") for pk in hits.values_list("public_id", flat=True)]
    found += [(str(pk), "unit id") for pk in Unit.objects.filter(hit__project=project).values_list("public_id",
                                                                                                   flat=True)]
    found += [(str(pk), "assignment id") for pk in Assignment.objects.filter(hit__project=project)
              .values_list("public_id", flat=True)]
    found += [(str(pk), "batch id") for pk in project.crowd_batches.values_list("public_id", flat=True)]
    found += [(str(pk), "link id") for pk in project.private_links.values_list("public_id", flat=True)]
    texts = [*DocumentSentence.objects.filter(document__project=project).values_list("text", flat=True)[:40],
             *SummarySentence.objects.filter(summary__document__project=project).values_list("text", flat=True)[:40],
             *KeyFact.objects.filter(document__project=project).values_list("text", flat=True)[:20]]
    found += [(text, "text") for text in texts if len(text) >= 24]
    return found


@pytest.fixture
def world(transactional_db, django_user_model, tmp_path, monkeypatch) -> World:
    a = Project.objects.create(slug="matrix-alpha", name="Matrix Alpha Study")
    b = Project.objects.create(slug="matrix-beta", name="Matrix Beta Study")
    # Texts of A and of B never coincide, so a text tells which project it came from.
    import_small(a)
    import_generated(b, documents=3, summarizers=2, sentences=3)
    for project in (a, b):
        add_assistance(project)
        with_checks(project, 0.34)
        build_all(project)

    add_project = Permission.objects.get(codename="add_project", content_type__app_label="corpus")

    def member(name: str, project: Project, role: str, *, creates: bool = False):
        user = django_user_model.objects.create_user(name, password=f"pw-{name}-1")
        Membership.objects.create(project=project, user=user, role=role)
        if creates:
            user.user_permissions.add(add_project)
        return user

    manager_a = member("manager-a", a, Membership.Role.MANAGER, creates=True)
    reviewer_a = member("reviewer-a", a, Membership.Role.REVIEWER)
    annotator_a = member("annotator-a", a, Membership.Role.ANNOTATOR)
    colleague_a = member("colleague-a", a, Membership.Role.ANNOTATOR)
    manager_b = member("manager-b", b, Membership.Role.MANAGER, creates=True)
    annotator_b = member("annotator-b", b, Membership.Role.ANNOTATOR)

    me = qualify(annotator_for(annotator_a), a)
    colleague = qualify(annotator_for(colleague_a), a)
    other_b = qualify(annotator_for(annotator_b), b)
    graded_a = submitted_by(colleague, a)  # a colleague's graded submission, and its pseudonym
    graded_b = submitted_by(other_b, b)
    held = reserve_next_hit(me, a, "fv", confirmed=True)
    held_b = reserve_next_hit(other_b, b, "fv", confirmed=True)

    link = link_create(project=a, task="fv", label="Expert of A")
    spare_link = link_create(project=a, task="kv", label="Spare link of A")
    link_b = link_create(project=b, task="fv", label="Link of B")
    link_worker = qualify(link_annotator(link=link), a)
    link_assignment, link_session = claims.link_next(link=link, annotator=link_worker)
    # The link worker's HIT shows highlights only: the AI's label and reason must not reach them.
    Hit.objects.filter(pk=link_assignment.hit_id).update(assistance="highlights")

    batches = {}
    for project, provider in itertools.product((a, b), ("mturk", "prolific")):
        batch = CrowdBatch.objects.create(project=project, task="fv", provider=provider, status="published",
                                          reward_usd=Decimal("0.60"), assignments_per_hit=3,
                                          external_id=secrets.token_hex(12))
        for n, hit in enumerate(Hit.objects.filter(project=project, task="fv").order_by("position")[:2]):
            CrowdHit.objects.create(batch=batch, hit=hit, request_token=f"{batch.pk}-{n}",
                                    external_id=f"MX{batch.pk}X{n}", published_at=timezone.now())
        batches[project.pk, provider] = batch
    confirmed, confirmed_assignment, confirmed_token = prolific_arrival(
        a, batches[a.pk, "prolific"], "c" * 24, "SESSIONC", confirmed=True, monkeypatch=monkeypatch)
    claim, claim_assignment, claim_token = prolific_arrival(
        a, batches[a.pk, "prolific"], "d" * 24, "SESSIOND", confirmed=False, monkeypatch=monkeypatch)

    jobs = {project.pk: export_job(project, tmp_path / "exports" / project.slug) for project in (a, b)}
    for project in (a, b):  # the analytics as a worker stored them, so that the CSVs answer
        numbers_now(project, ANALYTICS)

    def readable(annotator: Annotator) -> dict:
        own = Assignment.objects.filter(annotator=annotator, status=Assignment.Status.RESERVED)
        hits = Hit.objects.filter(assignments__in=own)
        return {"own_assignments": {str(x.public_id) for x in own},
                "readable_hits": {str(x.public_id) for x in hits},
                "readable_units": {str(x.public_id) for x in Unit.objects.filter(hit__in=hits)},
                "readable_documents": {str(x) for x in hits.values_list("document_id", flat=True)}}

    def account(name, user, **extra) -> Caller:
        roles = dict(Membership.objects.filter(user=user).values_list("project_id", "role"))
        return Caller(name, cookies=account_cookies(user), headers={"X-CSRFToken": CSRF}, roles=roles, account=True,
                      creates_projects=user.has_perm("corpus.add_project"), **extra)

    def crowd(name, annotator, provider, assignment, token) -> Caller:
        return Caller(name, cookies={"csrftoken": CSRF}, headers={"X-Finegrain-Session": token, "X-CSRFToken": CSRF},
                      crowd_project=a.pk, crowd_provider=provider, bound_assignment=str(assignment.public_id),
                      oracle=oracle_for(annotator))

    # Every annotator's pseudonym, and whose it is: annotators never see each other's.
    pseudonyms = {annotator.pseudonym: name for annotator, name in (
        (me, "annotator-a"), (colleague, "colleague-a"), (other_b, "annotator-b"), (link_worker, "link"),
        (confirmed, "prolific-confirmed"), (claim, "prolific-claim"))}
    hidden_ai = [("the source says so", "an AI reason the HIT's assistance level hides")]
    callers = [
        # Anonymous, as a browser is: with the CSRF cookie the log-in page sets.
        Caller("anonymous", cookies={"csrftoken": CSRF}, headers={"X-CSRFToken": CSRF}),
        account("annotator-a", annotator_a, oracle=oracle_for(me), **readable(me)),
        account("reviewer-a", reviewer_a),
        account("manager-a", manager_a),
        account("manager-b", manager_b),
        crowd("link-a", link_worker, "link", link_assignment, link_session),
        crowd("prolific-a-confirmed", confirmed, "prolific", confirmed_assignment, confirmed_token),
        crowd("prolific-a-claim", claim, "prolific", claim_assignment, claim_token),
        # The colleague's own log-in, carrying the unconfirmed claim's token: a forged arrival put to use.
        Caller("account-with-crowd-token", cookies=account_cookies(colleague_a),
               headers={"X-Finegrain-Session": claim_token, "X-CSRFToken": CSRF},
               roles={a.pk: Membership.Role.ANNOTATOR}, account=True, mixed=True, crowd_provider="prolific"),
    ]
    callers[5].forbidden += hidden_ai

    def ids(rows) -> list:
        return [str(row.public_id) for row in rows]

    own_assignments = [held, link_assignment, confirmed_assignment, claim_assignment]
    assignments = [(str(x.public_id), a.pk) for x in own_assignments] + [(str(graded_a.public_id), a.pk),
                                                                          (str(held_b.public_id), b.pk)]
    hits = [(str(held.hit.public_id), a.pk), (str(link_assignment.hit.public_id), a.pk),
            (str(held_b.hit.public_id), b.pk)]
    units = [(str(held.hit.units.order_by("position").first().public_id), a.pk),
             (str(held_b.hit.units.order_by("position").first().public_id), b.pk)]
    documents = [(str(held.hit.document_id), a.pk), (str(held_b.hit.document_id), b.pk)]
    pools = {
        "slug": [(a.slug, a.pk), (b.slug, b.pk)],
        "task": [("fv", None), ("kv", None)],
        "format": [("json", None), (".json", None)],  # format suffixes, should any route have them again
        "position": [("0", None)],
        "assignment_id": assignments,
        "hit_id": hits,
        "unit_id": units,
        "annotator_id": [(str(colleague.public_id), a.pk), (str(other_b.public_id), b.pk)],
        "batch_id": [(str(batches[a.pk, "mturk"].public_id), a.pk), (str(batches[b.pk, "mturk"].public_id), b.pk)],
        "link_id": [(str(spare_link.public_id), a.pk), (str(link_b.public_id), b.pk)],
        "pk": documents,
        "public_id": assignments,
        "table": [("scores", None)],
        "name": [(f"{a.slug}.jsonl", a.pk), (f"{b.slug}.jsonl", b.pk)],
        # The admin's parameters: the projects through its shortcut, accounts, its apps.
        "content_type_id": [(str(ContentType.objects.get_for_model(Project).pk), None)],
        "object_id": [(str(a.pk), a.pk), (str(b.pk), b.pk)],
        "id": [(str(manager_b.pk), None)],
        "app_label": [("auth", None)],
        "url": [("corpus/project/", None)],
    }
    summaries = Summary.objects.filter(document_id=held.hit.document_id)[:1]
    view_pools = {
        "job_status": {"pk": [(str(jobs[a.pk].pk), a.pk), (str(jobs[b.pk].pk), b.pk)]},
        **{view: {"kind": [(kind.code, None) for kind in numbers_kinds()]} for view in ("numbers_status",
                                                                                       "numbers_update")},
        "exports_download": {"pk": [(str(jobs[a.pk].pk), a.pk), (str(jobs[b.pk].pk), b.pk)]},
        "summary-detail": {"pk": [(str(x.pk), a.pk) for x in summaries]
                           + [(str(x.pk), b.pk) for x in Summary.objects.filter(document__project=b)[:1]]},
        "keyfact-detail": {"pk": [(str(x.pk), a.pk) for x in KeyFact.objects.filter(document__project=a)[:1]]
                           + [(str(x.pk), b.pk) for x in KeyFact.objects.filter(document__project=b)[:1]]},
        "grade-detail": {"assignment": [(str(graded_a.public_id), a.pk), (str(graded_b.public_id), b.pk)]},
        "grade-override": {"assignment": [(str(graded_a.public_id), a.pk), (str(graded_b.public_id), b.pk)]},
        "grade_override": {"assignment_id": [(str(graded_a.public_id), a.pk), (str(graded_b.public_id), b.pk)]},
        "crowd_link": {"token": [(link_token(link), a.pk, True), ("not-a-link", None, False)]},
        "crowd_done": {"assignment_id": [(str(x.public_id), a.pk) for x in own_assignments]},
        "crowd_prolific_entry": {"batch_id": [(str(batches[a.pk, "prolific"].public_id), a.pk),
                                              (str(batches[b.pk, "prolific"].public_id), b.pk)]},
        **{view: {"public_id": hits} for view in ("hit-detail", "hit-assistance")},
        "unit-detail": {"public_id": units},
    }

    # Each caller its own invitation (an invitation is used once): one to the project it is in, so that joining
    # changes nothing; a used one and a revoked one refused for all.
    used, used_token = people.invite(project=a, role="annotator", label="Used", actor=manager_a)
    people.accept(token=used_token, user=django_user_model.objects.create_user("joined", password="pw-joined-1"))
    revoked, revoked_token = people.invite(project=a, role="annotator", label="Revoked", actor=manager_a)
    people.revoke(invitation=revoked, actor=manager_a)
    caller_pools = {}
    for caller in callers:
        project = b if caller.name == "manager-b" else a
        _, token = people.invite(project=project, role="annotator", label=f"For {caller.name}", actor=manager_a)
        caller_pools[caller.name] = {"invitation": {"token": [(token, project.pk, True), (used_token, a.pk, False),
                                                              (revoked_token, a.pk, False)]}}
    strings = {project.pk: project_strings(project) for project in (a, b)}
    return World(a, b, callers, pools, view_pools, caller_pools, strings, pseudonyms)


# --- The fillings -------------------------------------------------------------------------------------------------

MAX_FILLINGS = 12


def leaf_views(patterns=None, chain: tuple = (), namespace: str = "") -> list[tuple[tuple, str | None]]:
    """Every leaf of the URLconf as (its chain of patterns, its view name with the namespaces above it)."""
    leaves = []
    for entry in get_resolver().url_patterns if patterns is None else patterns:
        if isinstance(entry, URLResolver):
            inner = ":".join(filter(None, (namespace, entry.namespace)))
            leaves += leaf_views(entry.url_patterns, (*chain, entry.pattern), inner)
        elif isinstance(entry, URLPattern):
            name = entry.name and (f"{namespace}:{entry.name}" if namespace else entry.name)
            leaves.append(((*chain, entry.pattern), name))
    return leaves


def fillings_for(world: World, caller: Caller) -> list[Filling]:
    """Every leaf of the URLconf with its parameters filled from the world's pools (A's and B's values crossed),
    once with GET and once with POST."""
    found = []
    for chain, view in leaf_views():
        route = route_of(chain)
        own_pools = {**world.view_pools.get(view, {}), **world.caller_pools[caller.name].get(view, {})}
        for parts in itertools.product(*(formats_of(pattern) for pattern in chain)):
            text = "".join(part for part, _ in parts)
            names = [name for _, converters in parts for name in converters]
            choices = [own_pools.get(name) or world.pools.get(name) or [("x", None)] for name in names]
            for values in itertools.islice(itertools.product(*choices), MAX_FILLINGS):
                url = "/" + text % {name: value[0] for name, value in zip(names, values)}
                try:
                    match = resolve(url)
                except Resolver404:
                    continue
                if match.route != route:
                    continue
                projects = {value[1] for value in values if value[1] is not None}
                valid = {name for name, value in zip(names, values) if len(value) > 2 and value[2]}
                for method in ("GET", "POST"):
                    found.append(Filling(match.view_name, method, url, {n: v[0] for n, v in zip(names, values)},
                                         projects, valid))
    return found


# Requests that end or give up what the caller holds come last, so that they change nothing the sweep then asks.
LAST = ("hit_return", "assignment-return-hit", "logout", "admin:logout")


def order(fillings: list[Filling]) -> list[Filling]:
    return sorted(fillings, key=lambda f: (f.method == "POST", f.view in LAST, LAST.index(f.view)
                                           if f.view in LAST else 0))


# --- The sweep ----------------------------------------------------------------------------------------------------

def outcome(response: httpx.Response) -> str:
    status = response.status_code
    if status >= 500:
        return "error"
    if status == 405:
        return "method"
    if status in (401, 403, 404, 410):
        return "refused"
    location = response.headers.get("location", "")
    if status in (301, 302, 303, 307, 308) and location.startswith(LOGIN_PATHS) and "next=" in location:
        return "refused"  # sent to log in first (a log-out also lands on the log-in page, with no `next`)
    return "reached"


def foreign_strings(world: World, caller: Caller, filling: Filling) -> list[tuple[str, str]]:
    """What this response must not contain: the strings of every project the caller is not in (but the one an open
    route names: MTurk's preview of a batch), others' pseudonyms for those who annotate, and the caller's own."""
    allowed = caller.projects()
    if rule_for(filling.view) is not None and rule_for(filling.view).__name__ in ("anyone", "valid_token"):
        allowed |= filling.projects
    found = [(text, f"{what} of project {pk}") for pk, strings in world.strings.items() if pk not in allowed
             for text, what in strings]
    if caller.oracle is not None:  # those who annotate: no other annotator's pseudonym
        mine = {p for p, name in world.pseudonyms.items() if name == caller.name}
        found += [(p, f"{name}'s pseudonym") for p, name in world.pseudonyms.items() if p not in mine]
    return found + caller.forbidden


@dataclass
class Tally:
    requests: int = 0
    refused: int = 0
    reached: int = 0
    methods: int = 0
    errors: list = None
    wrong: list = None
    leaks: list = None

    def __post_init__(self):
        self.errors, self.wrong, self.leaks = [], [], []


def sweep(world: World, server_url: str, caller: Caller, tally: Tally, lock: threading.Lock, method: str) -> None:
    fillings = [filling for filling in order(fillings_for(world, caller)) if filling.method == method]
    with httpx.Client(base_url=server_url, cookies=caller.cookies, headers=caller.headers, timeout=60,
                      follow_redirects=False) as client:
        for filling in fillings:
            response = client.request(filling.method, filling.url)
            got = outcome(response)
            allowed = expected(caller, filling)
            body = response.text if "text" in response.headers.get("content-type", "") \
                or "json" in response.headers.get("content-type", "") else ""
            shown = body + "\n" + response.headers.get("location", "")
            # What the caller sent itself (a login redirect's `next`, a 404 naming the address) tells it nothing.
            leaks = [what for text, what in foreign_strings(world, caller, filling)
                     if text in shown and text not in filling.url]
            if caller.oracle is not None and got == "reached":
                leaks += caller.oracle.leaks(body, is_html="html" in response.headers.get("content-type", ""))
            with lock:
                tally.requests += 1
                where = f"{caller.name} {filling.method} {filling.url} -> {response.status_code}"
                if got == "error":
                    tally.errors.append(f"{where}: {body[:200]}")
                elif got == "method":
                    tally.methods += 1
                elif allowed and got == "reached":
                    tally.reached += 1
                elif not allowed and got == "refused":
                    tally.refused += 1
                else:
                    tally.wrong.append(f"{where}: expected {'reached' if allowed else 'refused'} "
                                       f"({rule_for(filling.view).__name__}) {body[:160]!r}")
                if leaks:
                    tally.leaks.append(f"{where}: {sorted(set(leaks))[:5]}")


def test_every_pattern_every_caller_both_methods_reaches_only_what_the_table_allows(world, tmp_path,
                                                                                   record_figures):
    # Every pattern has an expectation: a new page or route must be given one here before anything else.
    views = {}
    for caller in world.callers[:1]:
        for filling in fillings_for(world, caller):
            views.setdefault(route_of_url(filling.url), filling.view)
    unfilled = [route_of(chain) for chain in leaf_patterns() if route_of(chain) not in views]
    assert not unfilled, f"patterns the matrix could not fill: {unfilled}"
    missing = sorted({view for view in views.values() if rule_for(view) is None})
    assert not missing, f"patterns with no expectation in tests/reliability/role_matrix.py: {missing}"

    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per request would bury the findings
    tally, lock = Tally(), threading.Lock()
    jobs_before = Job.objects.count()
    with running_gunicorn(tmp_path / "gunicorn.log", FINEGRAIN_LINK_RATE="100000/m") as server:
        # Every GET of every caller first: a GET never starts long work (stored numbers included: their pages offer
        # a button), so not one Job row may appear; then every POST.
        for method in ("GET", "POST"):
            threads = [threading.Thread(target=sweep, args=(world, server.url, caller, tally, lock, method))
                       for caller in world.callers]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(timeout=900)
            assert not any(thread.is_alive() for thread in threads), "the sweep did not finish in 15 minutes"
            if method == "GET":
                started = list(Job.objects.order_by("pk").values_list("kind", flat=True)[jobs_before:])
                assert not started, f"GET requests started jobs: {started}"
    record_figures(requests=tally.requests, refused_as_expected=tally.refused, reached_as_expected=tally.reached,
                   method_not_allowed=tally.methods, server_errors=len(tally.errors), unexpected=len(tally.wrong),
                   leaks=len(tally.leaks), patterns=len(views), callers=len(world.callers))
    assert not (tally.errors or tally.wrong or tally.leaks), "\n".join([
        f"{len(tally.errors)} 5xx:", *tally.errors[:30], f"{len(tally.wrong)} unexpected:", *tally.wrong[:80],
        f"{len(tally.leaks)} leaks:", *tally.leaks[:40]])
    # The sweep saw both sides of every caller: something reached and something refused.
    assert tally.reached > 300 and tally.refused > 1000, tally


def route_of_url(url: str) -> str:
    return resolve(url.split("?")[0]).route


# --- The attacks, whole, against the same server ------------------------------------------------------------------

@pytest.fixture(scope="module")
def server(django_db_setup, tmp_path_factory):
    # One gunicorn for the module's attacks (starting one takes seconds): it keeps nothing of a test's world in its
    # processes, and each test's world is committed before its requests and flushed after them.
    # Prolific cannot be reached from here (a closed loopback port): an arrival stays a claim, as in an outage.
    with running_gunicorn(tmp_path_factory.mktemp("server") / "gunicorn.log", FINEGRAIN_LINK_RATE="100000/m",
                          FINEGRAIN_PROLIFIC_API_URL=f"http://127.0.0.1:{free_port()}",
                          FINEGRAIN_PROLIFIC_TOKEN="matrix") as running:
        yield running


def caller_named(world: World, name: str) -> Caller:
    return next(caller for caller in world.callers if caller.name == name)


def client_of(server, caller: Caller | None = None, **headers) -> httpx.Client:
    caller = caller or Caller("anonymous", cookies={"csrftoken": CSRF}, headers={"X-CSRFToken": CSRF})
    return httpx.Client(base_url=server.url, cookies=caller.cookies, headers={**caller.headers, **headers},
                        timeout=60, follow_redirects=False)


def test_a_forged_prolific_arrival_is_a_claim_that_no_other_door_honours(world, server):
    """The arrival of a real participant's id, typed by somebody else while Prolific is out of reach: its token
    opens its own HIT, unconfirmed, and nothing else, whoever carries it."""
    participant = "f" * 24
    batch = CrowdBatch.objects.get(project=world.a, provider="prolific")
    qualify(Annotator.objects.create(provider="prolific", external_id=participant), world.a)
    with client_of(server) as browser:
        arrival = browser.get(f"/crowd/prolific/{batch.public_id}/", params={
            "PROLIFIC_PID": participant, "STUDY_ID": batch.external_id, "SESSION_ID": "FORGED1"})
    assert arrival.status_code == 302 and "ct=" in arrival.headers["location"]
    token = arrival.headers["location"].split("ct=")[1]
    forged = Assignment.objects.get(annotator__external_id=participant)
    assert forged.confirmed_at is None

    reserve = {"project": world.a.slug, "task": "kv"}
    for name in ("annotator-a", "manager-a", "manager-b", "reviewer-a"):
        with client_of(server, caller_named(world, name), **{"X-Finegrain-Session": token}) as client:
            assert client.post("/api/assignments/reserve/", json=reserve).status_code == 403, name
            assert client.get(f"/work/hits/{forged.public_id}/", params={"ct": token}).status_code == 403, name
    with client_of(server, **{"X-Finegrain-Session": token}) as anonymous:
        assert anonymous.post("/api/assignments/reserve/", json=reserve).status_code == 403
        assert anonymous.post(f"/api/assignments/{forged.public_id}/answers/",
                              json={"unit": "0", "has_error": True}).status_code == 403
        assert anonymous.post(f"/work/{world.a.slug}/kv/next/", data={"crowd_token": token}).status_code == 403
        assert anonymous.get(f"/work/hits/{forged.public_id}/", params={"ct": token}).status_code == 200
    # Nothing was reserved in the participant's name but the arrival's own HIT, and that stays a claim.
    assert list(Assignment.objects.filter(annotator__external_id=participant)
                .values_list("pk", "confirmed_at")) == [(forged.pk, None)]


def test_invitations_are_used_once_expire_and_survive_a_race(world, server, django_user_model):
    manager = django_user_model.objects.get(username="manager-a")
    _, token = people.invite(project=world.a, role="reviewer", label="Raced", actor=manager)
    barrier = threading.Barrier(6)
    statuses = []

    def sign_up(n: int):
        with client_of(server) as browser:
            barrier.wait(timeout=30)
            statuses.append(browser.post(f"/invitation/{token}/", data={
                "username": f"racer-{n}", "password1": "pw-Racer-long-9x", "password2": "pw-Racer-long-9x"}
            ).status_code)

    threads = [threading.Thread(target=sign_up, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(statuses)[0] == 302 and statuses.count(302) == 1, statuses
    assert all(status in (302, 409, 410) for status in statuses), statuses
    # One account joined; the others were not made at all (the account and its joining are one transaction).
    joined = Membership.objects.filter(project=world.a, user__username__startswith="racer-")
    assert joined.count() == 1 and joined.get().role == "reviewer"
    assert django_user_model.objects.filter(username__startswith="racer-").count() == 1
    with client_of(server) as browser:
        assert browser.get(f"/invitation/{token}/").status_code == 410  # used
        _, late = people.invite(project=world.a, role="annotator", label="Late", actor=manager)
        Invitation.objects.filter(label="Late").update(expires_at=timezone.now() - timedelta(seconds=1))
        assert browser.get(f"/invitation/{late}/").status_code == 410
        assert browser.post(f"/invitation/{late}/", data={
            "username": "late", "password1": "pw-Late-long-9x", "password2": "pw-Late-long-9x"}).status_code == 410
    assert not django_user_model.objects.filter(username="late").exists()


def test_two_managers_demoting_each_other_at_once_leave_a_manager_and_no_error(world, server, django_user_model):
    first = django_user_model.objects.get(username="manager-a")
    second = django_user_model.objects.create_user("manager-a2", password="pw-manager-a2-1")
    Membership.objects.create(project=world.a, user=second, role=Membership.Role.MANAGER)
    clients = [client_of(server, Caller(user.username, cookies=account_cookies(user),
                                        headers={"X-CSRFToken": CSRF})) for user in (first, second)]
    statuses = Counter()
    try:
        for _ in range(12):
            Membership.objects.filter(project=world.a, user__in=[first, second]).update(role=Membership.Role.MANAGER)
            members = {m.user_id: m.pk for m in Membership.objects.filter(project=world.a, user__in=[first, second])}
            barrier = threading.Barrier(2)

            def demote(client, member: int, barrier=barrier):
                barrier.wait(timeout=30)
                statuses[client.post(f"/projects/{world.a.slug}/people/change/", data={
                    "action": "role", "member": str(member), "role": "reviewer"}).status_code] += 1

            threads = [threading.Thread(target=demote, args=(clients[0], members[second.pk])),
                       threading.Thread(target=demote, args=(clients[1], members[first.pk]))]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(timeout=60)
            assert Membership.objects.filter(project=world.a, role=Membership.Role.MANAGER).exists()
    finally:
        for client in clients:
            client.close()
    # Each round: one demotion goes through (302); the other is refused with the rule's message (400), or finds its
    # author no longer a manager (403). Never a 5xx.
    assert set(statuses) <= {302, 400, 403}, statuses
    assert statuses[302] >= 12, statuses
