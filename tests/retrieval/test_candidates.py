"""Which memories the ranking statement returns for scoring (retrieval.CANDIDATES): the best by
the cheap pre-score, the events around theirs, and those under an attribute the query asks
about, while BM25's statistics stay the whole scope's."""
from datetime import datetime, timezone

import numpy as np
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


def test_the_candidates_are_those_scoring_every_memory_would_choose(tenant_a, actor, monkeypatch):
    # Only BM25's matches and the best by similarity (with the priors) are scored in SQL: the
    # best by either pre-score must still be exactly what scoring every memory in scope gives.
    turns = [("Anna", text) for text in (
        "The violin teacher moved to Leeds.", "I bought new strings for my violin.", "Lunch was great.",
        "The orchestra plays on Friday.", "My cello needs a new bow.", "We watched a film about music.",
        "Practice went well today.", "The teacher says my scales are better.", "Rain again.",
        "I might take up the viola.", "Concert tickets are sold out.", "My neighbour plays the piano.")]
    memories = conversation(tenant_a, "alice", actor, turns)
    query = "music lessons with a teacher"
    full = signals(tenant_a, "alice", query)
    # The best by the pre-score after the first two that shares no word with the query weighs
    # most and the rest least: the priors lift it among the candidates, past one that matches
    # better, though neither BM25 nor similarity alone would choose it.
    order = np.argsort(-(full.sim + full.bm25 / 10), kind="stable")
    lifted = next(full.ids[i] for i in order[2:] if full.bm25[i] == 0)
    Memory.objects.filter(pk__in=[m.pk for m in memories]).update(importance=0.0, confidence=0.0)
    Memory.objects.filter(pk=lifted).update(importance=1.0, confidence=1.0)
    full = signals(tenant_a, "alice", query)
    assert len(full.ids) == len(turns)
    params = retrieval._prior_params()
    pre = full.sim + full.bm25 / 10
    prior = (params["w_recency"] * np.exp(-np.log(2) * full.age_days / params["half_life"])
             + params["w_importance"] * full.importance + params["w_confidence"] * full.confidence)
    top = 2
    by_pre = {full.ids[i] for i in np.argsort(-pre, kind="stable")[:top]}
    by_prior = {full.ids[i] for i in np.argsort(-(pre * params["pre_scale"] + prior), kind="stable")[:top]}
    by_sim = {full.ids[i] for i in np.argsort(-full.sim, kind="stable")[:top]}
    # Only the priors' arm can bring it in: not BM25 (it matches no word), not similarity alone.
    assert lifted in by_prior - by_pre - by_sim, "the priors choose no other memory here: the test would prove nothing"
    monkeypatch.setattr(retrieval, "CANDIDATES", top)
    monkeypatch.setattr(retrieval, "NEIGHBOUR_WINDOW", -1)  # no neighbours: the candidates alone
    few = signals(tenant_a, "alice", query)
    assert set(few.ids) == by_pre | by_prior
