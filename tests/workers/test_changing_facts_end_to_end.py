"""Events → a real Celery worker → search: an attribute no extraction rule knows changes value;
the new value answers at k=1 and as_of between the two statements returns the old one. The
phrasings were written for this test (no rule, no evaluation set has them)."""
from datetime import timedelta

import pytest

from memoryapp.models import Event
from memoryapp.retrieval import memory_search
from memoryapp.services.events import EventInput, event_append
from tests.conftest import as_tenant
from tests.workers.conftest import wait_for
from tests.workers.helpers import at

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

SMALL_TALK = [
    "can you explain how tides work", "lol that's a good one", "what's a quick lunch with chickpeas",
    "the printer at the library jammed twice today", "remind me what a haiku is",
    "my sister sent me a video of her cat falling off a sofa", "how many litres are in a gallon",
    "it's so windy today the bins blew over", "any tips for sleeping on a night train",
    "what's the difference between baking soda and baking powder",
]


@pytest.mark.parametrize("first,changed,question", [
    # a change word, other words: read-time supersession among the person's own statements
    ("on Thursdays I volunteer at the Riverside food bank, sorting tins mostly",
     "I no longer volunteer at the food bank, these days I help out at the Greenway animal shelter",
     "Where does the user volunteer?"),
    # the same words with another value, no change word: the later one answers first
    ("the board game we play most at home is Carcassonne",
     "the board game we play most at home is Wingspan",
     "Which board game does the user play most?"),
])
def test_an_attribute_with_no_rule_changes_and_the_new_value_answers(celery_worker, tenant_a, actor,
                                                                     first, changed, question):
    turns = [first, *SMALL_TALK[:6], changed, *SMALL_TALK[6:]]
    events = [EventInput(f"e{i}", "user", text, occurred_at=at(0) + timedelta(days=3 * i), speaker="Noor")
              for i, text in enumerate(turns)]
    event_append(tenant=tenant_a, subject_ref="noor", events=events, actor=actor)

    def processed():
        with as_tenant(tenant_a):
            return Event.objects.filter(tenant=tenant_a, subject__external_id="noor", status="processed").count()
    wait_for(lambda: processed() == len(turns), message="the worker to process the conversation")

    def top(**options):
        with as_tenant(tenant_a):
            hits = memory_search(tenant=tenant_a, subject_ref="noor", query=question, k=5, **options)
            return [h.memory.source_event.content if h.memory.source_event else h.memory.statement for h in hits]

    now = top()
    assert now[0] == changed, now
    assert first in now  # the older statement stays findable, after the new one
    between = top(as_of=at(0) + timedelta(days=3 * 7 - 1))
    assert between[0] == first, between
    assert changed not in between
