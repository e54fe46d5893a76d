"""The URLconf's order is free to follow the traffic (config/urls.py lists the annotator's pages first) only if no
pattern hides another: every leaf, walked from django.urls.get_resolver(), must be reachable by some address."""

import uuid

import pytest
from django.urls import URLPattern, URLResolver, get_resolver, resolve

from tests.quality.leak_crawler import Pools, fillings, leaf_patterns, route_of

# Values of every kind a route parameter takes, including the ones that look like another pattern's fixed words.
POOLS = Pools(by_name={}, uuids=[str(uuid.UUID(int=7))], ints=["7"],
              strings=["demo", "hits", "next", "screening", "instructions", "fv", "kv", "ka", "people.csv", "auth",
                       ".json"])


def test_every_pattern_of_the_urlconf_is_reachable():
    leaves = leaf_patterns()
    assert len(leaves) > 50  # the walk reached the includes
    unreachable = [route_of(chain) for chain in leaves if not fillings(chain, POOLS)]
    assert unreachable == []


def test_the_annotators_pages_are_tried_first():
    first = get_resolver().url_patterns[0]
    assert isinstance(first, URLResolver) and str(first.pattern) == "work/"
    assert isinstance(first.url_patterns[0], URLPattern) and first.url_patterns[0].name == "hit_answer"
    assert resolve(f"/work/hits/{uuid.UUID(int=7)}/answers/3/").url_name == "hit_answer"


@pytest.mark.parametrize("url, name", [("/work/", "work_home"), ("/work/instructions/", "work_instructions"),
                                       ("/work/demo/fv/next/", "work_next"), ("/work/demo/screening/", "work_screening"),
                                       ("/work/hits/screening/", "work_screening")])
def test_the_work_addresses_keep_their_views(url, name):
    assert resolve(url).url_name == name
