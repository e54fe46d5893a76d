"""What an annotator receives must not tell an attention check from a real unit: the checks of the HIT page's HTML
and of the REST API's JSON, shared by tests/quality/test_leaks.py and test_check_reasons.py."""

import json
import re
from html.parser import HTMLParser

from annotation.models import AttentionCheck
from annotation.services.assignment import reserve_next_hit
from tests.work import annotator_for

FORBIDDEN = ["attention", "expected", "origin", *AttentionCheck.Kind.values]


class Items(HTMLParser):
    """Each answer item (fieldset.item) as the list of its tags with attribute names and digit-free values."""

    def __init__(self):
        super().__init__()
        self.items: dict[int, list] = {}
        self.rows: list[list] = []
        self._current: int | None = None
        self._depth = 0
        self._row: list | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        shape = (tag, tuple(sorted((name, re.sub(r"\d+", "N", value or "")) for name, value in attrs.items())))
        if tag in ("section", "tr") and "keyfact-row" in attrs.get("class", ""):
            self._row = []
            self.rows.append(self._row)
        if self._current is None and tag == "fieldset" and "item" in attrs.get("class", "").split():
            self._current, self._depth = int(attrs["data-position"]), 0
            self.items[self._current] = []
        if self._current is not None:
            self.items[self._current].append(shape)
            if tag not in ("input", "br"):
                self._depth += 1
        elif self._row is not None:
            self._row.append(shape)

    def handle_endtag(self, tag):
        if self._current is not None and tag not in ("input", "br"):
            self._depth -= 1
            if self._depth == 0:
                self._current = None
        elif tag in ("section", "tr"):
            self._row = None


def assert_no_words(text: str, units) -> None:
    lowered = text.lower()
    for word in FORBIDDEN:
        assert word not in lowered, word
    # "check" only inside "checkbox"/"checked", which every item has.
    assert not re.search(r"check(?!box|ed)", lowered)
    for unit in units:
        check = AttentionCheck.objects.filter(unit=unit).first()
        if check and check.expected:
            assert json.dumps(check.expected) not in text
            assert json.dumps(check.expected).replace(" ", "") not in text


def hit_with_checks(project, task, client, user):
    annotator = annotator_for(user)
    assignment = reserve_next_hit(annotator, project, task, confirmed=True)
    assert assignment is not None
    units = list(assignment.hit.units.order_by("position"))
    checks = {u.pk for u in units if AttentionCheck.objects.filter(unit=u).exists()}
    assert checks and len(checks) < len(units), "the HIT needs checks and real units to compare"
    client.force_login(user)
    return assignment, units, checks


def assert_hit_page_hides_checks(project, annotator, client, task) -> None:
    assignment, units, checks = hit_with_checks(project, task, client, annotator)
    response = client.get(f"/work/hits/{assignment.public_id}/")
    assert response.status_code == 200
    html = response.content.decode()
    parser = Items()
    parser.feed(html)
    assert sorted(parser.items) == [u.position for u in units]
    real_shapes = {json.dumps(parser.items[u.position]) for u in units if u.pk not in checks}
    for unit in units:
        if unit.pk in checks:
            assert json.dumps(parser.items[unit.position]) in real_shapes, unit.position
    if task == "ka":
        assert len({json.dumps(row) for row in parser.rows}) == 1  # Every key-fact row has the same markup.
    assert_no_words(html, units)


def assert_api_hides_checks(project, annotator, client, task) -> None:
    assignment, units, checks = hit_with_checks(project, task, client, annotator)
    body = client.get(f"/api/assignments/{assignment.public_id}/").json()
    listed = client.get(f"/api/units/?hit={assignment.hit.public_id}").json()["results"]
    for payload in (body["units"], listed):
        assert [item["position"] for item in payload] == list(range(len(units)))
        by_position = {item["position"]: item for item in payload}
        real = [by_position[u.position] for u in units if u.pk not in checks]
        for unit in units:
            item = by_position[unit.position]
            assert set(item) == set(real[0])
            for name, value in item.items():
                assert type(value) is type(real[0][name]), name
            if "highlighted" in item:
                assert len(item["highlighted"]) == len(real[0]["highlighted"])
            if task == "fv":
                assert item["ai_source"] == real[0]["ai_source"]
                assert bool(item["ai_reason"]) == bool(real[0]["ai_reason"])
    text = json.dumps(body) + json.dumps(listed)
    assert_no_words(text, units)
    hit = client.get(f"/api/hits/{assignment.hit.public_id}/").json()
    assert_no_words(json.dumps(hit), units)
