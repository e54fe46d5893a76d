"""Responses for botocore's Stubber, shaped like MTurk's (the Stubber checks them against the service model)."""

from datetime import UTC, datetime, timedelta

from botocore.stub import ANY

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)


def mturk_id(prefix: str, n: int) -> str:
    return f"{prefix}{n:0>{30 - len(prefix)}}"


def expect_qualification_types(stubber, test_id="3TESTQUALIFICATIONTYPE000001",
                               block_id="3BLOCKQUALIFICATIONTYPE00001", project="alpha"):
    """The test qualification (one per requester) and `project`'s own "blocked" qualification."""
    for qual_id, name in ((test_id, "finegrain summary annotation test"), (block_id, f"finegrain blocked ({project})")):
        stubber.add_response("create_qualification_type", {"QualificationType": {
            "QualificationTypeId": qual_id, "Name": name, "QualificationTypeStatus": "Active"}},
            {"Name": name, "QualificationTypeStatus": "Active", "Description": ANY,
             **({"Keywords": ANY, "Test": ANY, "AnswerKey": ANY, "TestDurationInSeconds": 1800}
                if "test" in name else {})})
    return test_id, block_id


def expect_hit_type(stubber, hit_type="3HITTYPE000000000000000000001"):
    stubber.add_response("create_hit_type", {"HITTypeId": hit_type}, {
        "Title": ANY, "Description": ANY, "Keywords": ANY, "Reward": ANY, "AssignmentDurationInSeconds": ANY,
        "AutoApprovalDelayInSeconds": ANY, "QualificationRequirements": ANY})
    return hit_type


def expect_create_hit(stubber, hit_id: str, hit_type: str, token=ANY, max_assignments: int = 3):
    stubber.add_response("create_hit_with_hit_type", {"HIT": {"HITId": hit_id, "HITTypeId": hit_type}}, {
        "HITTypeId": hit_type, "MaxAssignments": max_assignments, "LifetimeInSeconds": ANY, "Question": ANY,
        "RequesterAnnotation": token, "UniqueRequestToken": token})


def assignment(assignment_id: str, hit_id: str, worker_id: str, status="Submitted") -> dict:
    return {"AssignmentId": assignment_id, "HITId": hit_id, "WorkerId": worker_id, "AssignmentStatus": status,
            "AcceptTime": NOW, "SubmitTime": NOW, "Answer": "<QuestionFormAnswers/>"}


def expect_add_place(stubber, hit_id: str, token=ANY, *, max_assignments: int = 3, expiration: datetime | None = None,
                     send: bool = True):
    """GetHIT (MaxAssignments, Expiration: a week ahead unless given), then one CreateAdditionalAssignmentsForHIT."""
    expiration = expiration or datetime.now(UTC) + timedelta(days=7)
    stubber.add_response("get_hit", {"HIT": {"HITId": hit_id, "MaxAssignments": max_assignments,
                                             "Expiration": expiration, "HITStatus": "Reviewable"}},
                         {"HITId": hit_id})
    if send:
        stubber.add_response("create_additional_assignments_for_hit", {}, {
            "HITId": hit_id, "NumberOfAdditionalAssignments": 1, "UniqueRequestToken": token})
