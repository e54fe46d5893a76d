"""Simulated annotators against a real web server: log in, reserve, answer, submit through the REST API.

Each annotator is one thread with its own httpx client (its own session cookie and CSRF token). Every answer and
submission the server acknowledged (2xx) is recorded client-side; the tests then compare that record with the
database. A transport error (a killed worker's connection) or a 5xx is retried with the same request: answers are
upserts and submissions carry an idempotency key, so a retry must never duplicate anything.
"""

import logging
import random
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field

import httpx

logging.getLogger("httpx").setLevel(logging.WARNING)  # one INFO line per request otherwise

PASSWORD = "reliability-pw-1"
MAX_TRIES = 6


@dataclass
class Tally:
    lock: threading.Lock = field(default_factory=threading.Lock)
    requests: int = 0
    statuses: Counter = field(default_factory=Counter)
    transport_errors: int = 0
    retries: int = 0
    # (username, assignment id, unit position) -> has_error, as last acknowledged
    answers: dict = field(default_factory=dict)
    answer_acks: int = 0
    # (username, assignment id) -> submission key
    submissions: dict = field(default_factory=dict)
    already_submitted_replies: int = 0
    unexpected: list = field(default_factory=list)
    gave_up: int = 0
    # what -> [count, total seconds] of acknowledged requests
    latency: dict = field(default_factory=dict)
    nothing_left: int = 0

    def timed(self, what: str, seconds: float) -> None:
        with self.lock:
            entry = self.latency.setdefault(what, [0, 0.0])
            entry[0] += 1
            entry[1] += seconds

    def mean_ms(self) -> dict:
        return {what: round(1000 * total / n) for what, (n, total) in self.latency.items()}

    def count(self, status: int | None) -> None:
        with self.lock:
            self.requests += 1
            if status is None:
                self.transport_errors += 1
            else:
                self.statuses[status] += 1

    @property
    def server_errors(self) -> int:
        return sum(n for status, n in self.statuses.items() if status >= 500)


class Annotator(threading.Thread):
    def __init__(self, base_url: str, username: str, project: str, tally: Tally, clock: "Clock", seed: int):
        super().__init__(name=f"annotator-{username}", daemon=True)
        self.base_url, self.username, self.project, self.tally, self.clock = (
            base_url, username, project, tally, clock)
        self.random = random.Random(seed)
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with httpx.Client(base_url=self.base_url, timeout=httpx.Timeout(30, connect=5)) as client:
                self.client = client
                try:
                    self.log_in()
                finally:
                    self.clock.ready.wait(timeout=120)  # the timed phase starts when everybody is logged in
                self.deadline = self.clock.deadline
                while time.monotonic() < self.deadline:
                    if not self.work_one_hit():
                        break
        except BaseException as exc:  # reported by the test, never swallowed
            self.error = exc

    def send(self, method: str, url: str, **kwargs) -> httpx.Response | None:
        """One logical request: retried after a transport error or a 5xx (the fault tests kill workers)."""
        for attempt in range(MAX_TRIES):
            if attempt:
                with self.tally.lock:
                    self.tally.retries += 1
                time.sleep(0.05 * attempt)
            headers = {"X-CSRFToken": self.client.cookies.get("csrftoken", "")}
            started = time.monotonic()
            try:
                response = self.client.request(method, url, headers=headers, **kwargs)
            except httpx.TransportError:
                self.tally.count(None)
                continue
            self.tally.count(response.status_code)
            self.tally.timed(url.rstrip("/").rsplit("/", 1)[-1], time.monotonic() - started)
            if response.status_code < 500:
                return response
        with self.tally.lock:
            self.tally.gave_up += 1
        return None

    def log_in(self) -> None:
        for _ in range(MAX_TRIES):
            try:
                page = self.client.get("/accounts/login/")
                self.tally.count(page.status_code)
                response = self.client.post("/accounts/login/", data={
                    "username": self.username, "password": PASSWORD,
                    "csrfmiddlewaretoken": self.client.cookies["csrftoken"]})
                self.tally.count(response.status_code)
            except httpx.TransportError:
                self.tally.count(None)
                continue
            if response.status_code == 302:
                return
        raise AssertionError(f"{self.username} could not log in")

    def work_one_hit(self) -> bool:
        response = self.send("POST", "/api/assignments/reserve/", json={"project": self.project, "task": "fv"})
        if response is None:
            return time.monotonic() < self.deadline
        if response.status_code == 204:
            with self.tally.lock:
                self.tally.nothing_left += 1
            return False  # nothing left for this annotator
        if response.status_code != 200:
            self.unexpected("reserve", response)
            return False
        assignment = response.json()
        assignment_id = assignment["id"]
        for unit in assignment["units"]:
            if time.monotonic() >= self.deadline:
                return False
            has_error = self.random.random() < 0.3
            body = {"unit": str(unit["position"]), "has_error": has_error,
                    "error_types": ["entity"] if has_error else [],
                    "seconds_on_item": round(self.random.uniform(1, 20), 1)}
            response = self.send("POST", f"/api/assignments/{assignment_id}/answers/", json=body)
            if response is None:
                continue
            if response.status_code != 200:
                self.unexpected("answer", response)
                return False
            with self.tally.lock:
                self.tally.answers[(self.username, assignment_id, unit["position"])] = has_error
                self.tally.answer_acks += 1
        if time.monotonic() >= self.deadline:
            return False
        key = uuid.uuid4().hex
        response = self.send("POST", f"/api/assignments/{assignment_id}/submit/", json={"submission_key": key})
        if response is None:
            return True
        if response.status_code != 200:
            self.unexpected("submit", response)
            return False
        with self.tally.lock:
            self.tally.submissions[(self.username, assignment_id)] = key
            self.tally.already_submitted_replies += bool(response.json()["already_submitted"])
        return True

    def unexpected(self, what: str, response: httpx.Response) -> None:
        with self.tally.lock:
            self.tally.unexpected.append((self.username, what, response.status_code, response.text[:300]))


def create_annotators(project, count: int) -> list[str]:
    """`count` annotator accounts with memberships; one password hash computed once (PBKDF2 is slow on purpose)."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.hashers import make_password

    from corpus.models import Membership

    User = get_user_model()
    hashed = make_password(PASSWORD)
    names = [f"rel-annotator-{n:03d}" for n in range(count)]
    users = User.objects.bulk_create([User(username=name, password=hashed) for name in names])
    Membership.objects.bulk_create([Membership(project=project, user=user, role=Membership.Role.ANNOTATOR)
                                    for user in users])
    return names


class Clock:
    """The timed phase starts when every annotator is logged in (the barrier's action sets the deadline)."""

    def __init__(self, parties: int, seconds: float):
        self.deadline = time.monotonic() + 120 + seconds
        self.ready = threading.Barrier(parties, action=lambda: setattr(self, "deadline", time.monotonic() + seconds))


def run_annotators(base_url: str, names: list[str], project: str, seconds: float, *, during=None) -> Tally:
    """Log every annotator in, then let them work until `seconds` have passed; `during(deadline)` runs meanwhile
    in this thread."""
    tally = Tally()
    clock = Clock(len(names) + 1, seconds)
    threads = [Annotator(base_url, name, project, tally, clock, seed=n) for n, name in enumerate(names)]
    for thread in threads:
        thread.start()
    clock.ready.wait(timeout=120)
    deadline = clock.deadline
    if during is not None:
        during(deadline)
    for thread in threads:
        thread.join(timeout=seconds + 90)
    stuck = [thread.name for thread in threads if thread.is_alive()]
    assert not stuck, f"annotator threads still running: {stuck[:5]}"
    errors = [(thread.name, repr(thread.error)) for thread in threads if thread.error is not None]
    assert not errors, errors[:5]
    return tally


def verify_against_database(tally: Tally, project) -> dict:
    """Every acknowledged answer is stored exactly once with its value; every acknowledged submit is recorded once."""
    from django.db.models import Count

    from annotation.models import Assignment, Label

    labels = Label.objects.filter(unit__hit__project=project)
    duplicates = list(labels.values("annotator", "unit").annotate(n=Count("pk")).filter(n__gt=1))
    stored = {(label.assignment.annotator.user.username, str(label.assignment.public_id), label.unit.position):
              label.has_error
              for label in labels.select_related("assignment__annotator__user", "unit")}
    lost = [key for key in tally.answers if key not in stored]
    wrong = [key for key, value in tally.answers.items() if key in stored and stored[key] != value]
    submitted = {(assignment.annotator.user.username, str(assignment.public_id)): assignment
                 for assignment in Assignment.objects.filter(hit__project=project, status="submitted")
                 .select_related("annotator__user")}
    lost_submissions = [key for key in tally.submissions if key not in submitted]
    wrong_keys = [key for key, value in tally.submissions.items()
                  if key in submitted and submitted[key].submission_key != value]
    over_full = list(Assignment.objects.filter(hit__project=project, status="submitted").values("hit")
                     .annotate(n=Count("pk")).filter(n__gt=project.annotators_per_unit))
    return {
        "labels_in_db": len(stored),
        "duplicates": len(duplicates),
        "lost_answers": len(lost),
        "wrong_values": len(wrong),
        "unacknowledged_but_stored": len(set(stored) - set(tally.answers)),
        "submissions_in_db": len(submitted),
        "lost_submissions": len(lost_submissions),
        "submission_key_mismatch": len(wrong_keys),
        "hits_over_capacity": len(over_full),
        "examples": {"lost": lost[:3], "wrong": wrong[:3], "duplicates": duplicates[:3],
                     "lost_submissions": lost_submissions[:3]},
    }
