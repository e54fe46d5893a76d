"""Who may reach what: the expectation table of the role matrix (tests/reliability/test_role_matrix.py).

Every leaf pattern of the URLconf is named here by its view name (`ResolverMatch.view_name`) with the rule that says
which callers may reach it; a pattern the table does not name fails the matrix, so a new page or API route forces a
decision the day it exists. The Django admin is named as a whole (its namespace): it is for operators, and a model
registered later is covered by the same rule.

A rule is a function of the caller and the request's filling (`Filling`: its view, its parameters and the projects
they belong to). Three rules come before the table, for every route:
- a request that carries both a log-in and a crowd token is refused;
- a crowd session is refused outside the crowd worker's own routes (annotation.crowd.tokens.CROWD_ROUTES);
- a filling that names objects of two projects (A's slug with B's HIT) is refused for everybody.
"""

from collections.abc import Callable
from dataclasses import dataclass, field

from annotation.crowd.tokens import CROWD_ROUTES


@dataclass
class Caller:
    """One kind of caller: what it sends (cookies, headers) and what it is (roles, the work it holds)."""

    name: str
    cookies: dict = field(default_factory=dict)
    headers: dict = field(default_factory=dict)
    roles: dict[int, str] = field(default_factory=dict)  # project pk -> role
    account: bool = False
    creates_projects: bool = False
    crowd_project: int | None = None  # the project a crowd session is bound to
    crowd_provider: str | None = None
    mixed: bool = False  # a log-in and somebody's crowd token together
    own_assignments: set[str] = field(default_factory=set)  # public ids it may work on
    readable_hits: set[str] = field(default_factory=set)
    readable_units: set[str] = field(default_factory=set)
    readable_documents: set[str] = field(default_factory=set)
    bound_assignment: str | None = None  # a crowd session's assignment
    # What no response to this caller may contain, beyond the other projects' strings: (text, what it is).
    forbidden: list[tuple[str, str]] = field(default_factory=list)
    oracle: object | None = None  # tests.quality.leak_crawler.Oracle, for those who annotate

    @property
    def is_crowd(self) -> bool:
        return self.crowd_provider is not None and not self.mixed

    def role(self, project: int | None) -> str | None:
        return self.roles.get(project) if project is not None else None

    def projects(self) -> set[int]:
        return set(self.roles) | ({self.crowd_project} if self.crowd_project else set())


@dataclass
class Filling:
    view: str
    method: str
    url: str
    values: dict[str, str]
    projects: set[int]  # the projects the URL's values belong to
    valid: set[str] = field(default_factory=set)  # parameters whose value is a working token

    @property
    def project(self) -> int | None:
        return next(iter(self.projects)) if len(self.projects) == 1 else None


Rule = Callable[[Caller, Filling], bool]


def anyone(caller: Caller, filling: Filling) -> bool:
    return True


def nobody(caller: Caller, filling: Filling) -> bool:
    return False


def account(caller: Caller, filling: Filling) -> bool:
    return caller.account


def creator(caller: Caller, filling: Filling) -> bool:
    return caller.account and caller.creates_projects


def role(*roles: str) -> Rule:
    def rule(caller: Caller, filling: Filling) -> bool:
        return caller.account and caller.role(filling.project) in roles

    rule.__name__ = "+".join(roles)
    return rule


MANAGER = role("manager")
READER = role("manager", "reviewer")
MEMBER = role("manager", "reviewer", "annotator")
ANNOTATOR = role("annotator")


def own_work(parameter: str) -> Rule:
    """The caller's own assignment: an account's, or the one a crowd session is bound to."""
    def rule(caller: Caller, filling: Filling) -> bool:
        value = filling.values.get(parameter)
        if caller.is_crowd:
            return value == caller.bound_assignment
        return caller.account and value in caller.own_assignments

    return rule


def crowd_bound(parameter: str) -> Rule:
    def rule(caller: Caller, filling: Filling) -> bool:
        return caller.is_crowd and filling.values.get(parameter) == caller.bound_assignment

    return rule


def manager_or(readable: str, parameter: str) -> Rule:
    """Managers of the object's project, and the account annotator whose HITs show it (`readable`: the caller's set
    of such ids)."""
    def rule(caller: Caller, filling: Filling) -> bool:
        return MANAGER(caller, filling) or (caller.account and filling.values.get(parameter)
                                            in getattr(caller, readable))

    return rule


def screening(caller: Caller, filling: Filling) -> bool:
    """An account annotator of the project, or a link session of it. A Prolific participant takes the test with
    the token its arrival gave for it (tests/crowd/test_prolific.py); one whose token is bound to a HIT has passed,
    and is refused here rather than sent on (its study session is not in that token)."""
    if caller.is_crowd:
        return caller.crowd_provider == "link" and caller.crowd_project == filling.project
    return ANNOTATOR(caller, filling)


def valid_token(caller: Caller, filling: Filling) -> bool:
    return "token" in filling.valid


def link_session(caller: Caller, filling: Filling) -> bool:
    return caller.is_crowd and caller.crowd_provider == "link"


def by_numbers_kind(caller: Caller, filling: Filling) -> bool:
    return (READER if filling.values.get("kind") == "review_tally" else MANAGER)(caller, filling)


EXPECTATIONS: dict[str, Rule] = {
    # Open doors.
    "login": anyone,
    "health": anyone,
    "work_instructions": anyone,
    "invitation": valid_token,
    # The crowd's ways in: MTurk's preview shows the task and a HIT's size to anybody; an arrival without the
    # provider's parameters is refused; a private link works for whoever holds it.
    "crowd_mturk_entry": anyone,
    "crowd_prolific_entry": nobody,
    "crowd_link": valid_token,
    "crowd_link_next": link_session,
    "crowd_done": crowd_bound("assignment_id"),
    # Any account: its own lists (what they list is scoped, and scanned below).
    "home": account,
    "project_list": account,
    "work_home": account,
    "password_change": account,
    "logout": anyone,
    "api_schema": account,
    "api_docs": account,
    "api-root": account,
    "project-list": account,
    "document-list": account,
    "summary-list": account,
    "keyfact-list": account,
    "hit-list": account,
    "unit-list": account,
    "assignment-list": account,
    "label-list": account,
    "grade-list": account,
    "assignment-reserve": account,
    "project_create": creator,
    # The annotator's work.
    "hit_page": own_work("assignment_id"),
    "hit_answer": own_work("assignment_id"),
    "hit_flag": own_work("assignment_id"),
    "hit_submit": own_work("assignment_id"),
    "hit_return": own_work("assignment_id"),
    "work_next": ANNOTATOR,
    "work_screening": screening,
    "assignment-detail": manager_or("own_assignments", "public_id"),
    "assignment-answers": own_work("public_id"),
    "assignment-submit": own_work("public_id"),
    "assignment-return-hit": own_work("public_id"),
    "hit-detail": manager_or("readable_hits", "public_id"),
    "unit-detail": manager_or("readable_units", "public_id"),
    "document-detail": manager_or("readable_documents", "pk"),
    # Members and readers of a project.
    "project_detail": MEMBER,
    "project-detail": MEMBER,
    "document_detail": READER,
    "review": READER,
    "review_unit": READER,
    "hit_list": READER,
    "hit_detail": READER,
    # Managers of a project.
    "summary-detail": MANAGER,
    "keyfact-detail": MANAGER,
    "hit-assistance": MANAGER,
    "grade-detail": MANAGER,
    "grade-override": MANAGER,
    "import_upload": MANAGER,
    "project_settings": MANAGER,
    "hit_send_back": MANAGER,
    "people": MANAGER,
    "people_change": MANAGER,
    "job_status": MANAGER,
    # Stored numbers: the reviewer's list is for its readers, the analytics and quality numbers for managers.
    "numbers_status": by_numbers_kind,
    "numbers_update": by_numbers_kind,
    "progress": MANAGER,
    "hits_build": MANAGER,
    "hits_ablation": MANAGER,
    "hit_assistance": MANAGER,
    "annotator_list": MANAGER,
    "costs": MANAGER,
    "quality_dashboard": MANAGER,
    "annotator_quality": MANAGER,
    "annotator_status": MANAGER,
    "grade_override": MANAGER,
    "crowd_manage": MANAGER,
    "crowd_publish": MANAGER,
    "crowd_worker": MANAGER,
    "crowd_decide": MANAGER,
    "crowd_link_new": MANAGER,
    "crowd_link_revoke": MANAGER,
    "assist_start": MANAGER,
    "assist_hallucinogenic": MANAGER,
    "exports_analytics": MANAGER,
    "exports_table_csv": MANAGER,
    "exports_evaluator_upload": MANAGER,
    "exports_evaluator_run": MANAGER,
    "exports_create": MANAGER,
    "exports_download": MANAGER,
}

# The admin is for operators (superusers), none of whom is among the callers; its log-in form is open (it says who
# may use it), and logging out ends whatever session the caller has.
ADMIN_OPEN = {"admin:login": anyone, "admin:logout": anyone}


def rule_for(view: str) -> Rule | None:
    if view in EXPECTATIONS:
        return EXPECTATIONS[view]
    if view.startswith("admin:"):
        return ADMIN_OPEN.get(view, nobody)
    return None


def expected(caller: Caller, filling: Filling) -> bool:
    """Whether `caller` may reach the filled route (a rule must exist: see `rule_for`)."""
    if caller.mixed:
        return False
    if caller.is_crowd and filling.view not in CROWD_ROUTES:
        return False
    if len(filling.projects) > 1:
        return False
    return rule_for(filling.view)(caller, filling)
