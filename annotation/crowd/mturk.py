"""Amazon Mechanical Turk (the protocol's home, paper 3.5). The only module that creates a boto3 `mturk` client.

The endpoint (sandbox or production) comes from settings, never from a request. botocore retries throttling and
5xx answers itself (standard/adaptive retry mode); a ServiceFault that still fails becomes ProviderTransientError (the
outbox retries it later), a RequestError becomes ProviderError with MTurk's error code.
"""

import hashlib
import re
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError
from django.conf import settings
from django.utils import timezone

from ..models import CrowdHit, ProviderResource
from . import mturk_xml
from .base import AlreadyDone, CrowdProvider, ProviderError, ProviderTransientError, RemoteSubmission

# System qualification types (MTurk documentation, "Qualification requirements").
APPROVAL_RATE = "000000000000000000L0"
APPROVED_HITS = "00000000000000000040"
LOCALE = "00000000000000000071"
WORKER_ORIGINS = ("https://www.mturk.com", "https://workersandbox.mturk.com")
PREVIEW_ASSIGNMENT_ID = "ASSIGNMENT_ID_NOT_AVAILABLE"

# What botocore's service model does not check for us.
REWARD = re.compile(r"^\d+\.\d{2}$")
ENTITY_ID = re.compile(r"^[A-Z0-9]+$")
COMPARATORS = {"LessThan", "LessThanOrEqualTo", "GreaterThan", "GreaterThanOrEqualTo", "EqualTo", "NotEqualTo",
               "Exists", "DoesNotExist", "In", "NotIn"}
ACTIONS_GUARDED = {"Accept", "PreviewAndAccept", "DiscoverPreviewAndAccept"}
HIT_ID_IN_MESSAGE = re.compile(r"\b([A-Z0-9]{20,64})\b")


def make_client(sandbox: bool):
    endpoint = settings.FINEGRAIN_MTURK_SANDBOX_ENDPOINT if sandbox else settings.FINEGRAIN_MTURK_ENDPOINT
    config = Config(retries={"mode": settings.FINEGRAIN_MTURK_RETRY_MODE,
                             "max_attempts": settings.FINEGRAIN_MTURK_MAX_ATTEMPTS},
                    connect_timeout=10, read_timeout=settings.FINEGRAIN_CROWD_TIMEOUT)
    return boto3.client("mturk", region_name="us-east-1", endpoint_url=endpoint, config=config)


def request_token(key: str) -> str:
    """MTurk's UniqueRequestToken holds at most 64 characters: a hash of our deterministic key."""
    return hashlib.sha256(key.encode()).hexdigest()


def check_params(params: dict) -> None:
    """Checks the service model leaves to the server: reward format, id patterns, enum values."""
    for name in ("Reward", "BonusAmount"):
        if name in params and not REWARD.match(params[name]):
            raise ValueError(f"{name} must look like 1.25 (dollars and two decimals), got {params[name]!r}")
    for name in ("HITId", "HITTypeId", "AssignmentId", "WorkerId", "QualificationTypeId"):
        if name in params and not ENTITY_ID.match(params[name]):
            raise ValueError(f"{name} {params[name]!r} is not an MTurk id")
    for requirement in params.get("QualificationRequirements", []):
        if requirement["Comparator"] not in COMPARATORS:
            raise ValueError(f"Unknown comparator {requirement['Comparator']!r}")
        if requirement.get("ActionsGuarded", "Accept") not in ACTIONS_GUARDED:
            raise ValueError(f"Unknown ActionsGuarded {requirement['ActionsGuarded']!r}")
        if not ENTITY_ID.match(requirement["QualificationTypeId"]):
            raise ValueError(f"{requirement['QualificationTypeId']!r} is not a qualification type id")


def _reward(amount: Decimal) -> str:
    return f"{amount:.2f}"


def _places_in_words(items) -> str:
    counts = sorted({item.places for item in items})
    return "/".join(str(count) for count in counts) or "0"


class MTurkProvider(CrowdProvider):
    name = "mturk"
    has_sandbox = True
    # Amazon closed Mechanical Turk to requesters for good on this day.
    closed_on = date(2026, 9, 30)
    frame_ancestors = WORKER_ORIGINS
    # A reward is the HIT type's, so a top-up HIT, paid for its own size, goes out in a batch of its own.
    topups = "hits"

    def __init__(self, sandbox: bool | None = None, client=None):
        self.sandbox = settings.FINEGRAIN_MTURK_SANDBOX if sandbox is None else sandbox
        self._client = client

    @property
    def client(self):
        if self._client is None:
            self._client = make_client(self.sandbox)
        return self._client

    def fee_rate(self, assignments_per_hit: int) -> Decimal:
        # MTurk pricing: 20% commission, 20% more for HITs with 10 or more assignments.
        return Decimal("0.40") if assignments_per_hit >= 10 else Decimal("0.20")

    def call(self, operation: str, **params) -> dict:
        check_params(params)
        try:
            return getattr(self.client, operation)(**params)
        except ClientError as error:
            info = error.response.get("Error", {})
            code = info.get("Code", "")
            turk_code = error.response.get("TurkErrorCode", "")
            message = info.get("Message", str(error))
            if code in ("ServiceFault", "ServiceUnavailable", "ThrottlingException", "InternalFailure"):
                raise ProviderTransientError(message, code=code) from error
            raise ProviderError(message, code=turk_code or code) from error
        except BotoCoreError as error:  # connection failures after botocore's own retries
            raise ProviderTransientError(str(error), code=type(error).__name__) from error

    # --- Resources created once
    def _find_qualification_type(self, name: str) -> str | None:
        token = None
        while True:
            params = {"Query": name, "MustBeRequestable": False, "MustBeOwnedByCaller": True, "MaxResults": 100}
            if token:
                params["NextToken"] = token
            page = self.call("list_qualification_types", **params)
            for qualification in page.get("QualificationTypes", []):
                if qualification["Name"] == name:
                    return qualification["QualificationTypeId"]
            token = page.get("NextToken")
            if not token:
                return None

    def _qualification_type(self, key: str, name: str, **params) -> str:
        def create():
            try:
                return self.call("create_qualification_type", Name=name, QualificationTypeStatus="Active",
                                 **params)["QualificationType"]["QualificationTypeId"]
            except ProviderError:
                # A name is unique per requester: created by an earlier run that crashed before recording it.
                existing = self._find_qualification_type(name)
                if existing is None:
                    raise
                return existing

        return self._resource(key, create)

    def test_qualification(self) -> str:
        test = mturk_xml.load_qualification_test()
        return self._qualification_type(
            "qualification_test", "finegrain summary annotation test",
            Keywords="summary, fact checking, annotation",
            Description="10 English comprehension questions that simulate the annotation tasks (all must be right).",
            Test=mturk_xml.question_form(test), AnswerKey=mturk_xml.answer_key(test), TestDurationInSeconds=1800)

    def block_qualification(self, project) -> str:
        """The project's own "blocked" qualification type: its HIT types require that a worker does not hold it, so a
        block keeps the worker from this project's HITs only. (CreateWorkerBlock would keep them from every HIT of the
        requester, whichever project's, and it is not used.)"""
        return self._qualification_type(
            f"block_qualification:{project.slug}", f"finegrain blocked ({project.slug})",
            Description=f"Workers held out of the finegrain project {project.slug} after repeated failed attention "
                        "checks.")

    def qualification_requirements(self, project) -> list[dict]:
        locales = [{"Country": code.strip()} for code in project.worker_locales.split(",") if code.strip()]
        return [
            {"QualificationTypeId": APPROVAL_RATE, "Comparator": "GreaterThanOrEqualTo",
             "IntegerValues": [project.min_approval_rate], "ActionsGuarded": "Accept"},
            {"QualificationTypeId": APPROVED_HITS, "Comparator": "GreaterThanOrEqualTo",
             "IntegerValues": [project.min_approved_hits], "ActionsGuarded": "Accept"},
            {"QualificationTypeId": LOCALE, "Comparator": "In", "LocaleValues": locales,
             "ActionsGuarded": "Accept"},
            {"QualificationTypeId": self.test_qualification(), "Comparator": "EqualTo", "IntegerValues": [100],
             "ActionsGuarded": "Accept"},
            {"QualificationTypeId": self.block_qualification(project), "Comparator": "DoesNotExist",
             "ActionsGuarded": "DiscoverPreviewAndAccept"},
        ]

    def describe(self, plan) -> list[str]:
        """What publishing `plan` would create, request by request, without calling MTurk (the dry run)."""
        from ..models import Task

        def known(key, name):
            found = ProviderResource.objects.filter(provider=self.name, sandbox=self.sandbox, key=key).first()
            return found.external_id if found else f"<new qualification type {name!r}>"

        endpoint = (settings.FINEGRAIN_MTURK_SANDBOX_ENDPOINT if self.sandbox else settings.FINEGRAIN_MTURK_ENDPOINT)
        project, reward = plan.project, _reward(plan.reward_usd)
        test = mturk_xml.load_qualification_test()
        lines = [f"Endpoint: {endpoint} ({'sandbox' if self.sandbox else 'PRODUCTION'})"]
        if not ProviderResource.objects.filter(provider=self.name, sandbox=self.sandbox,
                                               key="qualification_test").exists():
            lines.append(f"CreateQualificationType 'finegrain summary annotation test': {len(test['questions'])}"
                         f" questions (QuestionForm + AnswerKey), pass = 100")
        blocked_key, blocked_name = f"block_qualification:{project.slug}", f"finegrain blocked ({project.slug})"
        if not ProviderResource.objects.filter(provider=self.name, sandbox=self.sandbox, key=blocked_key).exists():
            lines.append(f"CreateQualificationType '{blocked_name}' (no test; this project's HITs require "
                         "DoesNotExist)")
        lines += [
            f"CreateHITType '{Task(plan.task).label}: judge machine-written summaries' Reward={reward} "
            f"AssignmentDuration={project.reservation_minutes * 60}s "
            f"AutoApprovalDelay={settings.FINEGRAIN_MTURK_AUTO_APPROVAL_HOURS * 3600}s",
            f"  requires {APPROVAL_RATE} (approval rate) >= {project.min_approval_rate}",
            f"  requires {APPROVED_HITS} (approved HITs) >= {project.min_approved_hits}",
            f"  requires {LOCALE} (locale) In {project.worker_locales}",
            f"  requires {known('qualification_test', 'finegrain summary annotation test')} (test) EqualTo 100",
            f"  requires {known(blocked_key, blocked_name)} (blocked) DoesNotExist",
            f"CreateHITWithHITType x {len(plan.items)}: MaxAssignments={_places_in_words(plan.items)} "
            f"Lifetime={settings.FINEGRAIN_HIT_LIFETIME_HOURS * 3600}s ExternalURL={plan.entry_url} "
            f"FrameHeight={settings.FINEGRAIN_MTURK_FRAME_HEIGHT}",
        ]
        return [*lines, plan.places_note] if plan.places_note else lines

    def prepare(self, batch, *, entry_url: str = "") -> None:
        from ..models import Task

        reward = _reward(batch.reward_usd)
        key = f"hit_type:{batch.project.slug}:{batch.task}:{reward}"
        requirements = self.qualification_requirements(batch.project)
        minutes = batch.project.reservation_minutes
        batch.external_id = self._resource(key, lambda: self.call(
            "create_hit_type", Title=f"{Task(batch.task).label}: judge machine-written summaries",
            Description="Read a source text and judge each summary sentence or key-fact (AI assistance shown).",
            Keywords="summary, fact checking, annotation, text", Reward=reward,
            AssignmentDurationInSeconds=minutes * 60,
            AutoApprovalDelayInSeconds=settings.FINEGRAIN_MTURK_AUTO_APPROVAL_HOURS * 3600,
            QualificationRequirements=requirements)["HITTypeId"])
        batch.save(update_fields=["external_id"])

    def publish_hit(self, batch, crowd_hit: CrowdHit, url: str) -> str:
        # The places of the HIT's own round: the first round's, or a top-up's (annotation.redundancy).
        places = crowd_hit.hit.places
        question = mturk_xml.external_question(url, settings.FINEGRAIN_MTURK_FRAME_HEIGHT)
        # MTurk honours a UniqueRequestToken for 24 hours: a HIT tried before, possibly that long ago, is looked up
        # first (RequesterAnnotation carries the token), or a late retry would create it a second time.
        if crowd_hit.attempts and batch.created < timezone.now() - timedelta(hours=23):
            found = self._find_hit(crowd_hit.request_token)
            if found:
                return found
        try:
            return self.call("create_hit_with_hit_type", HITTypeId=batch.external_id,
                             MaxAssignments=places,
                             LifetimeInSeconds=settings.FINEGRAIN_HIT_LIFETIME_HOURS * 3600, Question=question,
                             RequesterAnnotation=crowd_hit.request_token,
                             UniqueRequestToken=crowd_hit.request_token)["HIT"]["HITId"]
        except ProviderError as error:
            # A repeated token: MTurk created this HIT before (a publish that crashed before recording it).
            if "already" not in str(error).lower() and "HitAlreadyExists" not in error.code:
                raise
            match = HIT_ID_IN_MESSAGE.search(str(error).split(":", 1)[-1])
            hit_id = match.group(1) if match else self._find_hit(crowd_hit.request_token)
            if not hit_id:
                raise
            return hit_id

    def _find_hit(self, token: str) -> str | None:
        next_token = None
        while True:
            page = self.call("list_hits", MaxResults=100, **({"NextToken": next_token} if next_token else {}))
            for hit in page.get("HITs", []):
                if hit.get("RequesterAnnotation") == token:
                    return hit["HITId"]
            next_token = page.get("NextToken")
            if not next_token:
                return None

    # --- Workers
    def list_submissions(self, batch) -> list[RemoteSubmission]:
        found = []
        for hit_id in batch.crowd_hits.exclude(external_id="").values_list("external_id", flat=True):
            next_token = None
            while True:
                params = {"HITId": hit_id, "MaxResults": 100,
                          "AssignmentStatuses": ["Submitted", "Approved", "Rejected"]}
                if next_token:
                    params["NextToken"] = next_token
                page = self.call("list_assignments_for_hit", **params)
                for item in page.get("Assignments", []):
                    found.append(RemoteSubmission(
                        external_assignment_id=item["AssignmentId"], external_hit_id=item["HITId"],
                        worker_id=item["WorkerId"], status=item["AssignmentStatus"], submitted=True, raw={
                            "AssignmentStatus": item["AssignmentStatus"]}))
                next_token = page.get("NextToken")
                if not next_token:
                    break
        return found

    def lookup(self, external_assignment_id: str) -> RemoteSubmission | None:
        """GetAssignment. MTurk returns an assignment only once it is submitted (Submitted, Approved or Rejected; MTurk
        API reference, GetAssignment), so None means: not submitted to MTurk, or not one of ours at all."""
        try:
            item = self.call("get_assignment", AssignmentId=external_assignment_id)["Assignment"]
        except ProviderTransientError:
            raise
        except (ProviderError, ValueError):  # ValueError: not even shaped like an MTurk id
            return None
        return RemoteSubmission(external_assignment_id=item["AssignmentId"], external_hit_id=item["HITId"],
                                worker_id=item["WorkerId"], status=item["AssignmentStatus"], submitted=True,
                                raw={"AssignmentStatus": item["AssignmentStatus"]})

    def _status_is(self, assignment_id: str, status: str) -> bool:
        try:
            response = self.call("get_assignment", AssignmentId=assignment_id)
        except ProviderError:
            return False
        return response["Assignment"]["AssignmentStatus"] == status

    def _status(self, assignment_id: str) -> str | None:
        """MTurk's AssignmentStatus (Submitted, Approved, Rejected); None when MTurk refuses to say."""
        try:
            return self.call("get_assignment", AssignmentId=assignment_id)["Assignment"]["AssignmentStatus"]
        except ProviderTransientError:
            raise
        except ProviderError:
            return None

    def approve(self, claim, feedback: str, *, reverse_rejection: bool = False) -> dict:
        params = {"AssignmentId": claim.external_assignment_id, "RequesterFeedback": feedback[:1024]}
        if reverse_rejection:
            status = self._status(claim.external_assignment_id)
            if status == "Approved":
                raise AlreadyDone({"AssignmentStatus": "Approved"})
            if status != "Submitted":
                # ApproveAssignment overrides our rejection with OverrideRejection, for work submitted within the
                # last 30 days whose HIT still exists (MTurk API reference, ApproveAssignment).
                params["OverrideRejection"] = True
        try:
            response = self.call("approve_assignment", **params)
            return {**response, "overrode_rejection": True} if "OverrideRejection" in params else response
        except ProviderError as error:
            if (not isinstance(error, ProviderTransientError)
                    and self._status_is(claim.external_assignment_id, "Approved")):
                raise AlreadyDone({"AssignmentStatus": "Approved"}) from error
            raise

    def reject(self, claim, feedback: str) -> dict:
        try:
            return self.call("reject_assignment", AssignmentId=claim.external_assignment_id,
                             RequesterFeedback=feedback[:1024])
        except ProviderError as error:
            if (not isinstance(error, ProviderTransientError)
                    and self._status_is(claim.external_assignment_id, "Rejected")):
                raise AlreadyDone({"AssignmentStatus": "Rejected"}) from error
            raise

    def pay_bonus(self, *, worker_id: str, claim, amount: Decimal, reason: str, token: str, state: dict,
                  checkpoint) -> dict:
        try:
            return self.call("send_bonus", WorkerId=worker_id, BonusAmount=_reward(amount),
                             AssignmentId=claim.external_assignment_id, Reason=reason,
                             UniqueRequestToken=request_token(token))
        except ProviderError as error:
            # The same UniqueRequestToken: MTurk paid this bonus before and will not pay it twice.
            if not isinstance(error, ProviderTransientError) and "already" in str(error).lower():
                raise AlreadyDone({"message": str(error)}) from error
            raise

    def block(self, *, worker_id: str, reason: str, project) -> dict:
        qualification = self.block_qualification(project)
        self.call("associate_qualification_with_worker", QualificationTypeId=qualification, WorkerId=worker_id,
                  IntegerValue=1, SendNotification=False)
        return {"blocked": worker_id, "qualification": qualification}

    def unblock(self, *, worker_id: str, reason: str, project) -> dict:
        qualification = self.block_qualification(project)
        self.call("disassociate_qualification_from_worker", QualificationTypeId=qualification, WorkerId=worker_id,
                  Reason=reason)
        return {"unblocked": worker_id, "qualification": qualification}

    def _max_assignments(self, hit_id: str) -> int | None:
        try:
            return self.call("get_hit", HITId=hit_id)["HIT"]["MaxAssignments"]
        except ProviderTransientError:
            raise
        except ProviderError:
            return None

    def add_place(self, claim, *, rejected: bool, token: str, state: dict, checkpoint) -> dict:
        """One more assignment on the claim's HIT. MTurk reopens no assignment it has received, rejected or approved
        (its MaxAssignments are spent), so `rejected` changes nothing here. CreateAdditionalAssignmentsForHIT with a
        UniqueRequestToken derived from the decision's key; MaxAssignments is read first and recorded, so a retry,
        even after the 24 hours MTurk keeps a token, sees that the assignment was added and adds no second one."""
        hit_id = claim.external_hit_id
        hit = self.call("get_hit", HITId=hit_id)["HIT"]
        maximum = hit.get("MaxAssignments")
        if not isinstance(maximum, int):
            raise ProviderError(f"MTurk did not say how many assignments HIT {hit_id} has.", code="no_maximum")
        if "max_before" in state and maximum > state["max_before"]:
            raise AlreadyDone({**state, "max_assignments": maximum})
        # "HITs created with fewer than 10 assignments cannot be extended to have 10 or more assignments" (MTurk API
        # reference, CreateAdditionalAssignmentsForHIT: AWS.MechanicalTurk.InvalidMaximumAssignmentsIncrease); 10 or
        # more assignments take MTurk's higher fee, which the HIT was not published (nor estimated) at.
        if maximum < 10 <= maximum + 1:
            raise ProviderError(
                f"HIT {hit_id} has {maximum} assignments and MTurk refuses to take a HIT from fewer than 10 to 10 or "
                "more (its fee changes). MTurk will not offer it again; offer its missing annotation through a "
                "private link or Prolific.", code="InvalidMaximumAssignmentsIncrease")
        # An expired HIT is shown to no worker, so an added assignment would never be taken. Its lifetime is the
        # manager's (FINEGRAIN_HIT_LIFETIME_HOURS, or the batch was expired on purpose): it is not extended here.
        expiration = hit.get("Expiration")
        if expiration is not None and expiration <= timezone.now():
            expired = expiration.astimezone(UTC)
            raise ProviderError(
                f"HIT {hit_id} expired on {expired:%Y-%m-%d %H:%M} UTC: MTurk shows an expired HIT to nobody, so "
                "an added assignment would never be taken. Extend the HIT first (UpdateExpirationForHIT, or the "
                "requester site), then add the place again from the worker's page.", code="hit_expired")
        if "max_before" not in state:
            state["max_before"] = maximum
            checkpoint(state)
        try:
            self.call("create_additional_assignments_for_hit", HITId=hit_id, NumberOfAdditionalAssignments=1,
                      UniqueRequestToken=request_token(token))
        except ProviderError as error:
            # A repeated UniqueRequestToken: MTurk extended the HIT before and says so with an error.
            if (not isinstance(error, ProviderTransientError)
                    and (self._max_assignments(hit_id) or 0) > state["max_before"]):
                raise AlreadyDone({**state, "message": str(error)}) from error
            raise
        return {"hit_id": hit_id, "max_assignments": maximum + 1}

    def notify(self, *, worker_ids: list[str], subject: str, message: str) -> dict:
        failures = []
        for start in range(0, len(worker_ids), 100):  # NotifyWorkers takes at most 100 workers a call
            response = self.call("notify_workers", Subject=subject[:200], MessageText=message[:4096],
                                 WorkerIds=worker_ids[start:start + 100])
            failures.extend(response.get("NotifyWorkersFailureStatuses", []))
        return {"failures": failures}

    def _update_expiration(self, batch, expire_at: datetime) -> None:
        for hit_id in batch.crowd_hits.exclude(external_id="").values_list("external_id", flat=True):
            self.call("update_expiration_for_hit", HITId=hit_id, ExpireAt=expire_at)

    def expire(self, batch) -> None:
        # MTurk expires a HIT at once when ExpireAt is in the past.
        self._update_expiration(batch, datetime(2015, 1, 1, tzinfo=UTC))

    def extend_expiry(self, batch, *, hours: int) -> None:
        self._update_expiration(batch, timezone.now() + timedelta(hours=hours))
