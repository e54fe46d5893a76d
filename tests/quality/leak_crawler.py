"""A crawler of every door an annotator can open, and the oracle that says whether a response tells an attention
check from a real unit (tests/quality/test_leak_crawl.py).

The doors are enumerated, never listed by hand: every leaf pattern of the URLconf (django.urls.get_resolver(), walked
recursively, route and regex patterns alike) and every GET operation of the OpenAPI schema the app serves, with the
schema's query parameters. Path and query parameters are filled from pools of real values (`Pools`): the ids, slugs
and public ids of what the annotator's own HITs involve, of attention-check units, and of everything else of the
project and of another project. A URL is kept only if it resolves to the pattern being filled, so a pattern is
requested with every filling that reaches it.
"""

import html
import itertools
import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from urllib.parse import urlencode

from django.test import Client
from django.urls import Resolver404, URLPattern, URLResolver, get_resolver, resolve
from django.urls.resolvers import RegexPattern, RoutePattern
from django.utils.regex_helper import normalize
from drf_spectacular.generators import SchemaGenerator

from annotation.models import Annotator, Assignment, AttentionCheck
from annotation.permissions import READABLE_STATUSES
from corpus.models import Document, DocumentSentence, KeyFact, Summary, SummarySentence

# A pattern is requested with at most this many fillings (in the pools' order, what matters most first).
MAX_FILLINGS = 60
_ROUTE_PARAMETER = re.compile(r"<(?:(?P<converter>[^>:]+):)?(?P<name>[^>]+)>")


def leaf_patterns(patterns=None, prefix: tuple = ()) -> list[tuple]:
    """Every leaf of the URLconf as the tuple of patterns from the root down to it."""
    leaves = []
    for entry in get_resolver().url_patterns if patterns is None else patterns:
        if isinstance(entry, URLResolver):
            leaves += leaf_patterns(entry.url_patterns, (*prefix, entry.pattern))
        elif isinstance(entry, URLPattern):
            leaves.append((*prefix, entry.pattern))
    return leaves


def route_of(chain: tuple) -> str:
    """The route Django reports for a request this leaf serves (ResolverMatch.route: a nested regex loses its ^)."""
    route = ""
    for pattern in chain:
        route += str(pattern).removeprefix("^") if route else str(pattern)
    return route


def formats_of(pattern) -> list[tuple[str, dict]]:
    """The pattern as (format string with %(name)s, {name: converter or None}) possibilities."""
    if isinstance(pattern, RoutePattern):
        route, converters = str(pattern), {}

        def placeholder(match):
            converters[match["name"]] = pattern.converters.get(match["name"])
            return f"%({match['name']})s"

        return [(_ROUTE_PARAMETER.sub(placeholder, route.replace("%", "%%")), converters)]
    if isinstance(pattern, RegexPattern):
        return [(text, dict.fromkeys(names)) for text, names in normalize(pattern.regex.pattern)]
    raise TypeError(f"Unknown pattern {pattern!r}")


@dataclass
class Pools:
    """Candidate values per parameter name; a name it does not know gets every value of the parameter's kind."""

    by_name: dict[str, list[str]]
    uuids: list[str]
    ints: list[str]
    strings: list[str]

    def candidates(self, name: str, converter) -> list[str]:
        if name in self.by_name:
            values = self.by_name[name]
        else:
            kind = type(converter).__name__ if converter is not None else ""
            if kind == "UUIDConverter":
                values = self.uuids
            elif kind == "IntConverter":
                values = self.ints
            else:
                values = [*self.ints, *self.uuids, *self.strings]
        if converter is not None:  # e.g. the task converter: only what it takes
            values = [value for value in values if re.fullmatch(converter.regex, str(value))]
        return list(dict.fromkeys(values))


def fillings(chain: tuple, pools: Pools) -> list[str]:
    """URLs for one leaf: its format strings filled from the pools, kept when they resolve back to this leaf."""
    route = route_of(chain)
    urls: list[str] = []
    for parts in itertools.product(*(formats_of(pattern) for pattern in chain)):
        text = "".join(part for part, _ in parts)
        converters = {name: converter for _, names in parts for name, converter in names.items()}
        names = list(converters)
        choices = [pools.candidates(name, converters[name]) for name in names]
        for values in itertools.islice(_spread(choices), 20 * MAX_FILLINGS):
            url = "/" + text % dict(zip(names, values))
            try:
                match = resolve(url)
            except Resolver404:
                continue
            if match.route == route and url not in urls:
                urls.append(url)
                if len(urls) >= MAX_FILLINGS:
                    return urls
    return urls


def _spread(choices: list[list[str]]):
    """Every combination, the first values of every pool first (a pool's order is its priority)."""
    if not choices:
        yield ()
        return
    depth = max(len(values) for values in choices)
    seen = set()
    for limit in range(1, depth + 1):
        for combination in itertools.product(*(values[:limit] for values in choices)):
            if combination not in seen:
                seen.add(combination)
                yield combination


def schema_requests(schema: dict, pools: Pools) -> list[tuple[str, str]]:
    """(operation, URL) for every GET operation of an OpenAPI schema: path parameters filled from the pools, and
    each query parameter the operation documents tried alone with each of its candidates."""
    requests = []
    for path, operations in schema.get("paths", {}).items():
        operation = operations.get("get")
        if operation is None:
            continue
        names = re.findall(r"{(\w+)}", path)
        choices = [pools.candidates(name, None) for name in names]
        paths = []
        for values in itertools.islice(_spread(choices), MAX_FILLINGS):
            filled = path
            for name, value in zip(names, values):
                filled = filled.replace("{" + name + "}", str(value))
            paths.append(filled)
        queries = [parameter["name"] for parameter in operation.get("parameters", []) if parameter["in"] == "query"]
        for filled in paths:
            requests.append((f"GET {path}", filled))
            for name in queries:
                for value in pools.candidates(name, None)[:MAX_FILLINGS]:
                    requests.append((f"GET {path}?{name}", f"{filled}?{urlencode({name: value})}"))
    return requests


@dataclass
class HitShown:
    """The texts of one HIT the annotator may read: its real units' and its checks', and each unit's own (one
    text; a KA unit's key-fact and sentence)."""

    name: str
    real: set[str]
    checks: set[str]
    units: list[set[str]] = field(default_factory=list)


@dataclass
class Oracle:
    """What no response to the annotator may contain.

    - `forbidden`: corpus text the annotator's HITs do not show (summary and key-fact texts, sentences of other
      documents, reference summaries): it is the corpus, and set beside a HIT it tells the checks.
    - `hits`: for each HIT the annotator may read, a response that shows more of its items' texts than one unit's
      must show them all; one that shows the real ones without the checks (a summary's own sentence list, a
      document's key-facts) or the checks without the real ones (where a check was taken from) tells which are
      which. (One unit alone, checks and real units alike, is what a unit's own page shows.)
    - `markers`: what only the server knows (an attention check's kind, its expected answer) and corpus fields that
      say which items are real (a key-fact's status or origin, a summary's id, a document's name or reference).
    """

    forbidden: dict[str, str]
    hits: list[HitShown]
    markers: list[tuple[re.Pattern, str]]
    html_markers: list[str] = field(default_factory=list)

    @staticmethod
    def normal(text: str) -> str:
        return " ".join(text.split())

    def leaks(self, body: str, *, is_html: bool) -> list[str]:
        text = self.normal(html.unescape(body))
        found = [f"{what}: {needle[:60]!r}" for needle, what in self.forbidden.items() if needle in text]
        for hit in self.hits:
            real = {t for t in hit.real if t in text}
            checks = {t for t in hit.checks if t in text}
            shown = real | checks
            one_unit = any(shown <= unit for unit in hit.units)
            if shown and not one_unit and (real != hit.real or checks != hit.checks):
                found.append(f"{hit.name}: {len(real)} of {len(hit.real)} real items and {len(checks)} of "
                             f"{len(hit.checks)} checks shown")
        found += [what for pattern, what in self.markers if pattern.search(body)]
        if is_html:
            found += [f"label {label!r}" for label in self.html_markers if label in text]
        return found

    def shows_whole(self, body: str, hit: HitShown) -> bool:
        text = self.normal(html.unescape(body))
        return all(t in text for t in hit.real | hit.checks)


@dataclass
class Crawl:
    """The outcome: what was requested, per leaf route; what leaked, failed or broke."""

    requested: dict[str, list[tuple[str, int]]] = field(default_factory=lambda: defaultdict(list))
    leaks: list[tuple[str, int, list[str]]] = field(default_factory=list)
    errors: list[tuple[str, int, str]] = field(default_factory=list)
    bodies: dict[str, str] = field(default_factory=dict)

    @property
    def count(self) -> int:
        return sum(len(urls) for urls in self.requested.values())


def crawl(client: Client, pools: Pools, oracle: Oracle, *, extra_query: dict | None = None,
          headers: dict | None = None) -> Crawl:
    """GET every filled URL of the URLconf and of the schema as `client`; `extra_query` (a crowd session token) is
    added to every request."""
    result = Crawl()
    # The schema the app serves, as a signed-in user gets it (it is not served to anonymous or token-only visitors).
    schema = json.loads(json.dumps(SchemaGenerator().get_schema(request=None, public=True), default=str))
    urls = []
    for chain in leaf_patterns():
        filled = fillings(chain, pools)
        urls += [(route_of(chain), url) for url in filled]
        if not any(names for pattern in chain for _, names in formats_of(pattern)):
            # A list: narrowed to a project the way the API's lists are.
            urls += [(route_of(chain), f"{url}?{urlencode({'project': slug})}") for url in filled
                     for slug in pools.by_name["slug"]]
    urls += [(None, url) for _, url in schema_requests(schema, pools)]
    seen = set()
    for route, url in urls:
        if url in seen:
            continue
        seen.add(url)
        separator = "&" if "?" in url else "?"
        sent = f"{url}{separator}{urlencode(extra_query)}" if extra_query else url
        response = client.get(sent, **(headers or {}))
        match_route = route or resolve(url.split("?")[0]).route
        result.requested[match_route].append((url, response.status_code))
        if response.status_code >= 500:
            result.errors.append((url, response.status_code, response.content[:300].decode(errors="replace")))
            continue
        if getattr(response, "streaming", False):
            body = b"".join(response.streaming_content).decode(errors="replace")
        else:
            body = response.content.decode(errors="replace")
        result.bodies[url] = body
        leaks = oracle.leaks(body, is_html="html" in response.get("Content-Type", ""))
        if leaks:
            result.leaks.append((url, response.status_code, leaks))
    return result


def oracle_for(annotator: Annotator) -> Oracle:
    readable = list(Assignment.objects.filter(annotator=annotator, status__in=READABLE_STATUSES)
                    .select_related("hit__document"))
    shown_hits = []
    for assignment in readable:
        units = list(assignment.hit.units.select_related("attention_check"))
        real = {text for u in units if not hasattr(u, "attention_check") for text in (u.text, u.sentence_text)}
        checks = {text for u in units if hasattr(u, "attention_check") for text in (u.text, u.sentence_text)}
        shown_hits.append((assignment, real - {""}, checks - real - {""}))
    source = set(DocumentSentence.objects.filter(document__in=[a.hit.document for a in readable])
                 .values_list("text", flat=True))
    allowed = source | {text for _, real, checks in shown_hits for text in real | checks}
    corpus = {
        **dict.fromkeys(SummarySentence.objects.values_list("text", flat=True), "a summary sentence"),
        **dict.fromkeys(Summary.objects.values_list("text", flat=True), "a summary"),
        **dict.fromkeys(KeyFact.objects.values_list("text", flat=True), "a key-fact"),
        **dict.fromkeys(Document.objects.exclude(reference="").values_list("reference", flat=True), "a reference summary"),
        **dict.fromkeys(DocumentSentence.objects.values_list("text", flat=True), "another document's sentence"),
    }
    forbidden = {Oracle.normal(text): what for text, what in corpus.items()
                 if len(text) >= 12 and not any(text in shown for shown in allowed)}
    hits = []
    for assignment, real, checks in shown_hits:
        # Texts another of the annotator's HITs or the source also shows are no evidence either way.
        elsewhere = source | {t for other, r, c in shown_hits if other != assignment for t in r | c}
        units = [{Oracle.normal(t) for t in (u.text, u.sentence_text) if t and t not in elsewhere}
                 for u in assignment.hit.units.all()]
        hits.append(HitShown(f"{assignment.hit.get_task_display()} HIT {assignment.hit.public_id}",
                             {Oracle.normal(t) for t in real - elsewhere},
                             {Oracle.normal(t) for t in checks - elsewhere}, units))
    expected = {json_form for check in AttentionCheck.objects.all() for json_form in _json_forms(check.expected)}
    markers = [(re.compile(re.escape(kind)), f"the check kind {kind}") for kind in AttentionCheck.Kind.values]
    markers += [(re.compile(re.escape(form)), f"an expected answer {form}") for form in expected]
    markers += [
        (re.compile(r'"(?:status|origin)"\s*:\s*"(?:candidate|accepted|rejected|imported|generated|human)"'),
         "a key-fact's status or origin"),
        (re.compile(r'"(?:summary|summary_id|keyfact|keyfact_id)"\s*:\s*(?:\d|null)'), "a summary or key-fact id"),
        (re.compile(r'"(?:uid|doc_id|document_uid|reference|summary_model)"\s*:\s*"'),
         "a document's name or reference"),
        (re.compile(r"/api/(?:summaries|keyfacts)/\d"), "a link to a summary or key-fact"),
    ]
    labels = [label for _, label in KeyFact.Status.choices if label != "Candidate"]
    labels += [label for _, label in KeyFact.Origin.choices]
    return Oracle(forbidden=forbidden, hits=hits, markers=markers, html_markers=labels)


def _json_forms(expected: dict) -> list[str]:
    return [json.dumps(expected), json.dumps(expected, separators=(",", ":"))] if expected else []
