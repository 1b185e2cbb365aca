"""Which memories the ranking statement returns for scoring (retrieval.CANDIDATES): the best by
the cheap pre-score, the events around theirs, and those under an attribute the query asks
about, while BM25's statistics stay the whole scope's."""
from datetime import datetime, timezone

import pytest
from django.db import transaction

from memoryapp import embeddings, retrieval
from memoryapp.models import Memory
from memoryapp.retrieval import search_signals
from memoryapp.tenancy import tenant_activate
from tests.retrieval.test_ranking import conversation, write

pytestmark = pytest.mark.django_db


def signals(tenant, subject, query, **kw):
    with transaction.atomic():
        tenant_activate(tenant=tenant)
        now = datetime.now(timezone.utc)
        return search_signals(tenant=tenant, subject_ref=subject, query=query,
                              query_embedding=embeddings.embed_text(query, partition=None), as_of=now, now=now,
                              statuses=[Memory.Status.ACTIVE], include_superseded=False, **kw)


TURNS = [("Anna", "We talked about the weather."), ("Bob", "It rained all week."),
         ("Anna", "Did you ever go to the violin lesson?"), ("Bob", "Yes, the violin teacher was great."),
         ("Anna", "Nice."), ("Bob", "Anyway."), ("Anna", "Lunch soon?"), ("Bob", "Sure, Tuesday."),
         ("Anna", "Great."), ("Bob", "See you.")]


def test_a_candidates_neighbouring_events_are_scored_and_distant_ones_are_not(tenant_a, actor, monkeypatch):
    memories = conversation(tenant_a, "alice", actor, TURNS)
    monkeypatch.setattr(retrieval, "CANDIDATES", 1)
    sig = signals(tenant_a, "alice", "violin teacher")
    best = memories[3]
    assert sig.ids[0] == best.pk
    # the window and one more either side of the best turn (seq 3): turns 0-6; never 7-9
    assert set(sig.ids) - {best.pk} <= {m.pk for m in memories[:7]}
    assert {m.pk for m in memories[1:6]} <= set(sig.ids)
    assert not {m.pk for m in memories[8:]} & set(sig.ids)


def test_bm25_statistics_are_the_whole_scopes_whatever_is_returned(tenant_a, actor, monkeypatch):
    conversation(tenant_a, "alice", actor, TURNS)
    full = signals(tenant_a, "alice", "violin teacher")
    monkeypatch.setattr(retrieval, "CANDIDATES", 1)
    few = signals(tenant_a, "alice", "violin teacher")
    assert len(few.ids) < len(full.ids)
    assert few.bm25_ideal == pytest.approx(full.bm25_ideal)
    by_id = dict(zip(full.ids, full.bm25))
    assert all(b == pytest.approx(by_id[i]) for i, b in zip(few.ids, few.bm25))


def test_a_memory_under_an_attribute_the_query_asks_about_is_a_candidate(tenant_a, actor, monkeypatch):
    conversation(tenant_a, "alice", actor, TURNS)
    job = write(tenant_a, "alice", "The user works as a pilot.", actor, key="user:job").memory
    monkeypatch.setattr(retrieval, "CANDIDATES", 1)
    assert job.pk not in signals(tenant_a, "alice", "violin teacher").ids
    assert job.pk in signals(tenant_a, "alice", "violin teacher", keys=(("user:job", 1.0),)).ids


def test_a_query_lexeme_with_a_quote_in_it_is_matched_as_written(tenant_a, actor):
    # The query's lexemes become a text-search query inside quotes ('a' | 'b'): an apostrophe in
    # one (a URL's path keeps it: "/menu'23") must be doubled, or the statement fails to parse.
    conversation(tenant_a, "alice", actor, [("Anna", "The menu is at http://example.org/menu'23 now."),
                                            ("Bob", "I'll read the lunch menu later.")])
    sig = signals(tenant_a, "alice", "http://example.org/menu'23")
    by_text = dict(zip(sig.ids, sig.bm25))
    best = max(by_text, key=by_text.get)
    assert by_text[best] > 0
    assert "menu'23" in Memory.objects.get(pk=best).statement
