"""Prolific (docs.prolific.com, API v1). The only module that talks HTTP to Prolific, through one httpx client.

A batch is one study whose external URL carries {{%PROLIFIC_PID%}}, {{%STUDY_ID%}} and {{%SESSION_ID%}}; the
participant comes back to Prolific with the study's completion code. The study opens in a new tab (Prolific's
way), so our pages are never framed by Prolific. Bonuses are created, then paid: the pay call is not idempotent
(Prolific's documentation says so), so its sending is checkpointed first and an uncertain payment is never
repeated: it fails the decision for a person to check.
"""

from collections import defaultdict
from decimal import Decimal
from urllib.parse import urlsplit

import httpx
from django.conf import settings

from .base import AlreadyDone, CrowdProvider, ProviderError, ProviderTransientError, RemoteSubmission, usd

# Prolific asks for at least 100 characters of explanation on a rejection.
MIN_REJECTION_MESSAGE = 100
REJECTION_CATEGORIES = {"TOO_QUICKLY", "TOO_SLOWLY", "FAILED_INSTRUCTIONS", "INCOMP_LONGITUDINAL", "FAILED_CHECK",
                        "LOW_EFFORT", "MALINGERING", "NO_CODE", "BAD_CODE", "NO_DATA", "UNSUPP_DEVICE", "OTHER"}
SUBMITTED = {"AWAITING REVIEW", "APPROVED", "REJECTED"}
COMPLETE_URL = "https://app.prolific.com/submissions/complete?cc={code}"
# "A broadcast can go to as many people as a bulk message, 4,000 by default" (docs.prolific.com, "Send a broadcast").
BULK_MESSAGE_LIMIT = 4000
URL_PARAMETERS = "PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"


def make_client() -> httpx.Client:
    return httpx.Client(base_url=settings.FINEGRAIN_PROLIFIC_API_URL, timeout=settings.FINEGRAIN_CROWD_TIMEOUT,
                        headers={"Authorization": f"Token {settings.FINEGRAIN_PROLIFIC_TOKEN}",
                                 "Content-Type": "application/json", "Accept": "application/json"})


def rejection_message(reason: str) -> str:
    message = reason.strip() or "Your submission failed the attention checks built into the task."
    if len(message) < MIN_REJECTION_MESSAGE:
        message += (" The task contains items with a known answer; the answers given to them show that the "
                    "instructions were not followed, so the submission cannot be accepted.")
    return message


class ProlificProvider(CrowdProvider):
    name = "prolific"
    # A failed submission fails its attention checks (Prolific's rejection categories: REJECTION_CATEGORIES).
    REJECTION_CATEGORY = "FAILED_CHECK"
    # A study has one reward and any of its participants takes the next HIT of its task: a top-up HIT needs places.
    topups = "places"

    def __init__(self, client: httpx.Client | None = None):
        self._client = client

    @property
    def client(self) -> httpx.Client:
        if self._client is None:
            self._client = make_client()
        return self._client

    def fee_rate(self, assignments_per_hit: int) -> Decimal:
        return Decimal(settings.FINEGRAIN_PROLIFIC_FEE_RATE)

    def call(self, method: str, path: str, json=None) -> dict:
        try:
            response = self.client.request(method, path, json=json)
        except httpx.TransportError as error:
            raise ProviderTransientError(str(error), code=type(error).__name__) from error
        if response.status_code == 429 or response.status_code >= 500:
            raise ProviderTransientError(response.text[:500], code=str(response.status_code))
        if response.status_code >= 400:
            try:
                detail = response.json().get("error", response.json())
            except ValueError:
                detail = response.text
            raise ProviderError(str(detail)[:1000], code=str(response.status_code))
        return response.json() if response.content else {}

    def blocklist_group(self, project) -> str:
        # A participant group lives in a workspace: POST /api/v1/participant-groups/ takes name and workspace_id (or
        # organisation_id), not a project (docs.prolific.com, "Create a new participant group within a workspace").
        if not settings.FINEGRAIN_PROLIFIC_WORKSPACE_ID:
            raise ProviderError("This site has no Prolific workspace yet (the blocklist of the study's workers "
                                "lives in one): the site's operators name it (operations guide).",
                                code="configuration")
        return self._resource(f"blocklist:{project.slug}", lambda: self.call(
            "POST", "/api/v1/participant-groups/", {
                "name": f"finegrain blocked ({project.slug})", "workspace_id": settings.FINEGRAIN_PROLIFIC_WORKSPACE_ID,
                "description": "Participants blocked after repeated failed attention checks."})["id"])

    def describe(self, plan) -> list[str]:
        places = sum(item.places for item in plan.items)
        lines = [f"POST {settings.FINEGRAIN_PROLIFIC_API_URL}/api/v1/studies/ with {places} places, reward "
                 f"{int(plan.reward_usd * 100)} cents, external_study_url {plan.entry_url}?{URL_PARAMETERS}",
                 "POST /api/v1/studies/<id>/transition/ {\"action\": \"PUBLISH\"}"]
        return [*lines, plan.places_note] if plan.places_note else lines

    def prepare(self, batch, *, entry_url: str) -> None:
        from ..models import Task

        group = self.blocklist_group(batch.project)
        # Each HIT's own round's places (the first round's, not N); top-ups add theirs later (`add_places`).
        places = sum(crowd_hit.hit.places for crowd_hit in batch.crowd_hits.select_related("hit__project"))
        body = {
            "name": f"{Task(batch.task).label}: judge machine-written summaries",
            "internal_name": f"finegrain {batch.project.slug} {batch.task} {batch.public_id}",
            "description": "Read a source text and judge each summary sentence or key-fact (AI assistance shown).",
            "external_study_url": f"{entry_url}?{URL_PARAMETERS}",
            "prolific_id_option": "url_parameters",
            "completion_codes": [{"code": batch.completion_code, "code_type": "COMPLETED",
                                  "actions": [{"action": "MANUALLY_REVIEW"}]}],
            "total_available_places": places,
            "estimated_completion_time": batch.project.reservation_minutes // 2 or 1,
            "maximum_allowed_time": batch.project.reservation_minutes,
            "reward": int(batch.reward_usd * 100),
            "device_compatibility": ["desktop"],
            # The filter that keeps a participant group out, its group ids in selected_values (prolific-oss/skills,
            # find-audience/references/cli.md; docs.prolific.com, "Participant Groups", names the blocklist filter).
            "filters": [{"filter_id": "participant_group_blocklist", "selected_values": [group]}],
            "project": settings.FINEGRAIN_PROLIFIC_PROJECT_ID,
        }
        batch.external_id = self._resource(f"study:{batch.public_id}",
                                           lambda: self.call("POST", "/api/v1/studies/", body)["id"])
        batch.save(update_fields=["external_id"])

    def publish_hit(self, batch, crowd_hit, url: str) -> str:
        return batch.external_id  # one study serves every HIT of the batch

    def finish_publish(self, batch) -> None:
        study = self.call("GET", f"/api/v1/studies/{batch.external_id}/")
        if study.get("status") == "UNPUBLISHED":
            self.call("POST", f"/api/v1/studies/{batch.external_id}/transition/", {"action": "PUBLISH"})

    def list_submissions(self, batch) -> list[RemoteSubmission]:
        found, path = [], f"/api/v1/studies/{batch.external_id}/submissions/"
        while path:
            page = self.call("GET", path)
            for item in page.get("results", []):
                found.append(RemoteSubmission(
                    external_assignment_id=item["id"], external_hit_id=batch.external_id,
                    worker_id=item["participant_id"], status=item["status"],
                    submitted=item["status"] in SUBMITTED, raw={"status": item["status"]}))
            href = ((page.get("_links") or {}).get("next") or {}).get("href")
            # Follow the next page on our own API host only, whatever host the link names.
            path = (urlsplit(href).path + (f"?{urlsplit(href).query}" if urlsplit(href).query else "")) if href \
                else None
        return found

    def lookup(self, external_assignment_id: str) -> RemoteSubmission | None:
        """GET /api/v1/submissions/{id}/: the submission's study, participant and status (docs.prolific.com, "Retrieve
        a submission"; the participant is `participant` there, `participant_id` in study listings). A 404 means
        Prolific knows no such submission of ours."""
        try:
            item = self.call("GET", f"/api/v1/submissions/{external_assignment_id}/")
        except ProviderTransientError:
            raise
        except ProviderError as error:
            if error.code in ("404", "403"):
                return None
            raise
        return RemoteSubmission(
            external_assignment_id=item.get("id", external_assignment_id), external_hit_id=item.get("study_id", ""),
            worker_id=item.get("participant") or item.get("participant_id") or "", status=item.get("status", ""),
            submitted=item.get("status") in SUBMITTED, raw={"status": item.get("status", "")})

    def _transition(self, claim, body: dict, done_status: str) -> dict:
        try:
            return self.call("POST", f"/api/v1/submissions/{claim.external_assignment_id}/transition/", body)
        except ProviderError as error:
            if isinstance(error, ProviderTransientError):
                raise
            current = self.call("GET", f"/api/v1/submissions/{claim.external_assignment_id}/")
            if current.get("status") == done_status:
                raise AlreadyDone({"status": done_status}) from error
            raise

    def approve(self, claim, feedback: str, *, reverse_rejection: bool = False) -> dict:
        path = f"/api/v1/submissions/{claim.external_assignment_id}/"
        reversed_rejection = False
        if reverse_rejection:
            status = self.call("GET", path).get("status")
            if status == "APPROVED":
                raise AlreadyDone({"status": status})
            if status == "REJECTED":
                # A rejection is reversed, which puts the submission back to AWAITING REVIEW, then approved
                # (researcher help centre, "How do I reverse a rejection?": it needs enough funds to approve). The
                # UNREJECT transition comes from the prolific-oss CLI (cmd/submission/transition.go), not from an API
                # reference page; if Prolific refuses it, a person reverses the rejection in the web app.
                try:
                    self.call("POST", f"{path}transition/", {"action": "UNREJECT"})
                except ProviderTransientError:
                    raise
                except ProviderError as error:
                    raise ProviderError(
                        f"Prolific refused to reverse the rejection ({error}). Reverse it in Prolific's web app "
                        "(rejected submissions, reverse arrow), then approve it there.",
                        code="rejection_not_reversed") from error
                reversed_rejection = True
        response = self._transition(claim, {"action": "APPROVE"}, "APPROVED")
        return {**response, "reversed_rejection": True} if reversed_rejection else response

    def reject(self, claim, feedback: str) -> dict:
        category = self.REJECTION_CATEGORY
        return self._transition(claim, {"action": "REJECT", "message": rejection_message(feedback),
                                        "rejection_category": category}, "REJECTED")

    def pay_bonus(self, *, worker_id: str, claim, amount: Decimal, reason: str, token: str, state: dict,
                  checkpoint) -> dict:
        if state.get("paid"):
            raise AlreadyDone(state)
        if state.get("pay_sent"):
            raise ProviderError(f"A pay request for bulk bonus {state.get('bulk_id')} was sent and its outcome is "
                                "unknown; Prolific's pay call is not idempotent, so check the workspace before "
                                "paying again.", code="uncertain_payment")
        if not state.get("bulk_id"):
            created = self.call("POST", "/api/v1/submissions/bonus-payments/", {
                "study_id": claim.batch.external_id, "csv_bonuses": f"{worker_id},{amount:.2f}\n"})
            state.update(bulk_id=created["id"], fees=str(usd(Decimal(created.get("fees", 0)) / 100)))
            checkpoint(state)
        state["pay_sent"] = True
        checkpoint(state)
        self.call("POST", f"/api/v1/bulk-bonus-payments/{state['bulk_id']}/pay/")
        state["paid"] = True
        checkpoint(state)
        return {"bulk_id": state["bulk_id"], "fees": state["fees"], "paid": True}

    def add_place(self, claim, *, rejected: bool, token: str, state: dict, checkpoint) -> dict:
        """One more place on the claim's study (a batch is one study: any of its HITs takes the place).

        A rejection frees the place by itself: "REJECTED: Submission has been rejected. The participant is not paid.
        The study place becomes available for another participant." (docs.prolific.com, API reference, "Submission
        object"). So a rejected submission needs no call. A failed submission approved anyway keeps its place, so
        the study's total_available_places is raised by one: PATCH /api/v1/studies/{id}/, the way the prolific-oss
        CLI's `study increase-places` does it (cmd/study/increase_places.go: places can be increased, never
        decreased). The field is a total, not an increment, so the total aimed at is recorded before it is sent: a
        retry that finds the study at it or above adds nothing. The outbox adds one place per study at a time."""
        if rejected:
            return {"local": True, "freed_by_rejection": True}
        path = f"/api/v1/studies/{claim.batch.external_id}/"
        current = self.call("GET", path).get("total_available_places")
        if not isinstance(current, int):
            raise ProviderError(f"Prolific did not say how many places study {claim.batch.external_id} has.",
                                code="no_places")
        if "target" in state and current >= state["target"]:
            raise AlreadyDone({**state, "total_available_places": current})
        if "target" not in state:
            state["target"] = current + 1
            checkpoint(state)
        study = self.call("PATCH", path, {"total_available_places": state["target"]})
        return {"study": claim.batch.external_id, "target": state["target"],
                "total_available_places": study.get("total_available_places", state["target"])}

    def add_places(self, batch, *, places: int, token: str) -> dict:
        """Raise the study's total_available_places by `places` for one top-up HIT (PATCH, as `add_place`). The total
        aimed at is recorded under `token` before it is sent, so a retry sends the same total and adds nothing
        again; the caller lets no other change of the study's places run meanwhile (annotation/crowd/topups.py)."""
        path = f"/api/v1/studies/{batch.external_id}/"
        current = self.call("GET", path).get("total_available_places")
        if not isinstance(current, int):
            raise ProviderError(f"Prolific did not say how many places study {batch.external_id} has.",
                                code="no_places")
        target = int(self._resource(f"topup_places:{token}", lambda: str(current + places)))
        if current >= target:
            raise AlreadyDone({"target": target, "total_available_places": current})
        study = self.call("PATCH", path, {"total_available_places": target})
        return {"study": batch.external_id, "target": target,
                "total_available_places": study.get("total_available_places", target)}

    def block(self, *, worker_id: str, reason: str, project) -> dict:
        group = self._group_for_worker(worker_id, project)
        self.call("POST", f"/api/v1/participant-groups/{group}/participants/", {"participant_ids": [worker_id]})
        return {"group": group}

    def unblock(self, *, worker_id: str, reason: str, project) -> dict:
        group = self._group_for_worker(worker_id, project)
        self.call("DELETE", f"/api/v1/participant-groups/{group}/participants/", {"participant_ids": [worker_id]})
        return {"group": group}

    def _group_for_worker(self, worker_id: str, project) -> str:
        if project is None:
            raise ProviderError("A block names its project: each project has its own blocklist group.",
                                code="no_project")
        return self.blocklist_group(project)

    def notify(self, *, worker_ids: list[str], subject: str, message: str) -> dict:
        """A message names the study it is about: POST /api/v1/messages/bulk/ requires ids, body and study_id
        (docs.prolific.com, "Send a message to multiple participants"), so each participant is written to about the
        latest study of ours Prolific confirmed they took part in; one who took part in none is reported, not written
        to."""
        from ..models import CrowdClaim

        latest = dict(CrowdClaim.objects.filter(provider=self.name, worker_id__in=worker_ids, batch__isnull=False,
                                                verified=True)
                      .order_by("created", "pk").values_list("worker_id", "batch__external_id"))
        by_study = defaultdict(list)
        for worker_id in dict.fromkeys(worker_ids):
            if latest.get(worker_id):
                by_study[latest[worker_id]].append(worker_id)
        for study_id, ids in by_study.items():
            for start in range(0, len(ids), BULK_MESSAGE_LIMIT):
                self.call("POST", "/api/v1/messages/bulk/", {"ids": ids[start:start + BULK_MESSAGE_LIMIT],
                                                             "body": f"{subject}\n\n{message}",
                                                             "study_id": study_id})
        return {"sent": sum(len(ids) for ids in by_study.values()),
                "failures": [{"worker_id": worker_id, "reason": "took part in none of our studies"}
                             for worker_id in dict.fromkeys(worker_ids) if not latest.get(worker_id)]}

    def expire(self, batch) -> None:
        self.call("POST", f"/api/v1/studies/{batch.external_id}/transition/", {"action": "STOP"})

    def extend_expiry(self, batch, *, hours: int) -> None:
        # A Prolific study has no expiry date: it runs until its places are taken or it is stopped.
        self.call("POST", f"/api/v1/studies/{batch.external_id}/transition/", {"action": "START"})
