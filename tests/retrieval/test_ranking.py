"""Ranking behaviour of memory_search beyond the basic filters: BM25 text scoring, neighbour
smoothing over adjacent events, query understanding, and that none of it crosses a scope."""
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest
from django.db import transaction

from memoryapp import embeddings
from memoryapp.query import query_understand
from memoryapp.models import Memory
from memoryapp.retrieval import (
    PASSAGE_SCALE, RELEVANCE, Signals, memory_search, passage_similarity, relevance_scores, search_signals,
)
from memoryapp.services.events import EventInput, event_append
from memoryapp.services.memories import MemoryDraft, memory_write
from memoryapp.tenancy import tenant_activate

pytestmark = pytest.mark.django_db

T0 = datetime(2024, 5, 8, 13, 0, tzinfo=timezone.utc)


def write(tenant, subject, statement, actor, **kw):
    return memory_write(tenant=tenant, subject_ref=subject, draft=MemoryDraft(statement=statement, **kw), actor=actor)


def conversation(tenant, subject, actor, turns, session="s1", start=T0):
    """Append turns as events and write one episodic memory per event (what extraction does)."""
    events = [EventInput(event_id=f"{session}-{i}", role="user", content=text, speaker=speaker,
                         session_id=session, occurred_at=start + timedelta(seconds=i))
              for i, (speaker, text) in enumerate(turns)]
    appended, _ = event_append(tenant=tenant, subject_ref=subject, events=events, actor=actor)
    memories = []
    for item, (speaker, text) in zip(appended, turns):
        memories.append(write(tenant, subject, f"{speaker}: {text}", actor, memory_type="episodic",
                              source_kind="user", source_event=item.event, valid_from=item.event.occurred_at).memory)
    return memories


def signals(sims, bm25, seqs, sessions=None, speakers=None, has_time=None):
    n = len(sims)
    return Signals(
        ids=list(range(n)), sim=np.array(sims, float), bm25=np.array(bm25, float),
        session=sessions or ["s"] * n, seq=seqs, speaker=speakers or [""] * n,
        has_time=np.array(has_time or [False] * n), age_days=np.zeros(n), importance=np.full(n, 0.5),
        confidence=np.ones(n), untrusted=np.zeros(n, bool),
    )


def test_a_turn_whose_neighbour_matches_outranks_an_isolated_weaker_match():
    # 0 asks the question the query is about, 1 is its answer (weak on its own), 2 is unrelated
    # but a little better than 1 on its own, and sits in another session.
    sig = signals(sims=[0.9, 0.35, 0.4], bm25=[5.0, 0.0, 0.5], seqs=[1, 2, 7], sessions=["a", "a", "b"])
    alone, _ = relevance_scores(sig, query_understand("x"), {**RELEVANCE, "neighbour": 0})
    smoothed, parts = relevance_scores(sig, query_understand("x"))
    assert alone[2] > alone[1]
    assert smoothed[1] > smoothed[2]
    assert parts["neighbour"][2] == 0  # no neighbour across sessions


def test_memories_without_a_source_event_get_no_neighbour_credit():
    sig = signals(sims=[0.9, 0.3, 0.3], bm25=[3.0, 0.0, 0.0], seqs=[1, None, 2])
    _, parts = relevance_scores(sig, query_understand("x"))
    assert parts["neighbour"][1] == 0 and parts["neighbour"][2] > 0


def test_an_episodes_passage_is_the_scaled_mean_of_it_and_its_neighbours_in_its_session():
    # Rows arrive in ranking order, not conversation order; a fact (index 4) is its own passage,
    # and the gap in session a (seq 2 is not in scope) still leaves 1 and 3 adjacent.
    sig = signals(sims=[0.2, 0.8, 0.5, 0.1, 0.9, 0.4], bm25=[0.0] * 6, seqs=[3, 1, 5, 1, 3, 2],
                  sessions=["a", "a", "a", "b", "a", "b"])
    sig.is_episode = np.array([True, True, True, True, False, True])
    got = passage_similarity(sig)
    expected = [(0.2 + 0.8 + 0.5) / 3, (0.8 + 0.2) / 2, (0.5 + 0.2) / 2, (0.1 + 0.4) / 2, None, (0.4 + 0.1) / 2]
    for i, value in enumerate(expected):
        assert got[i] == pytest.approx(0.9 if value is None else PASSAGE_SCALE * value)
    # An episode alone in its session is its own passage, unscaled, as a fact is.
    alone = signals(sims=[0.6, 0.6], bm25=[0.0, 0.0], seqs=[1, 4], sessions=["a", "b"])
    alone.is_episode = np.array([True, False])
    assert list(passage_similarity(alone)) == pytest.approx([0.6, 0.6])


def test_a_memory_knows_whether_it_says_when(tenant_a, actor):
    dated = write(tenant_a, "alice", "We moved to Porto last March.", actor).memory
    undated = write(tenant_a, "alice", "Porto has the best custard tarts.", actor).memory
    year = write(tenant_a, "alice", "The flat was built in 1932.", actor).memory
    flags = dict(Memory.objects.filter(pk__in=[dated.pk, undated.pk, year.pk]).values_list("pk", "has_time_reference"))
    assert flags == {dated.pk: True, undated.pk: False, year.pk: True}


def test_a_when_question_through_the_ranking_statement_prefers_the_dated_memory(tenant_a, actor, settings):
    # The stored time flag and the age come from the ranking statement's own columns.
    undated = write(tenant_a, "alice", "Alice went to the pottery class with her kids.", actor,
                    valid_from=T0).memory
    dated = write(tenant_a, "alice", "Alice went to a pottery class last Friday.", actor,
                  valid_from=T0 - timedelta(days=30)).memory
    when = memory_search(tenant=tenant_a, subject_ref="alice", query="When did Alice go to the pottery class?", k=2)
    what = memory_search(tenant=tenant_a, subject_ref="alice", query="Who went to the pottery class?", k=2)
    assert when[0].memory.pk == dated.pk and what[0].memory.pk == undated.pk
    ages = {h.memory.pk: h.details["recency"] for h in when}
    now = datetime.now(timezone.utc)
    for memory, valid_from in ((undated, T0), (dated, T0 - timedelta(days=30))):
        age = (now - valid_from).total_seconds() / 86400
        assert ages[memory.pk] == pytest.approx(0.5 ** (age / settings.MEMORY_RECENCY_HALF_LIFE_DAYS), rel=1e-3)


def test_when_questions_prefer_memories_that_carry_a_time_reference():
    sig = signals(sims=[0.5, 0.5], bm25=[1.0, 1.0], seqs=[None, None], has_time=[False, True])
    when, _ = relevance_scores(sig, query_understand("When did she move to Lisbon?"))
    what, _ = relevance_scores(sig, query_understand("Why did she move to Lisbon?"))
    assert when[1] > when[0]
    assert what[1] == what[0]


def test_query_understanding_finds_names_and_when_questions():
    info = query_understand("When did Caroline go to Melanie's pottery class?")
    assert info.names == {"caroline", "melanie"} and info.asks_when
    info = query_understand("What does the user like to eat?")
    assert info.names == frozenset() and not info.asks_when
    assert query_understand("How long has Jon been dancing?").asks_when


def test_rare_words_outweigh_common_ones_in_text_scoring(tenant_a, actor):
    for text in ["I went to the market today.", "I went to the gym today.", "I went to work today.",
                 "Today I went to the park."]:
        write(tenant_a, "alice", text, actor)
    write(tenant_a, "alice", "My tortoise Pickles turned forty.", actor)
    hits = memory_search(tenant=tenant_a, subject_ref="alice", query="What did I do today with Pickles?", k=5)
    assert hits[0].memory.statement == "My tortoise Pickles turned forty."
    assert hits[0].details["text_score"] > max(h.details["text_score"] for h in hits[1:])


def test_text_scoring_matches_word_forms(tenant_a, actor):
    write(tenant_a, "alice", "I hiked the Pacific Crest Trail.", actor)
    write(tenant_a, "alice", "I prefer tea to coffee.", actor)
    hits = memory_search(tenant=tenant_a, subject_ref="alice", query="hiking", k=2)
    assert hits[0].memory.statement == "I hiked the Pacific Crest Trail."
    assert hits[0].details["text_score"] > 0 and hits[1].details["text_score"] == 0


def test_the_answer_turn_after_a_question_is_found_through_its_neighbour(tenant_a, actor):
    memories = conversation(tenant_a, "alice", actor, [
        ("Mel", "Did you end up doing anything special for your anniversary?"),
        ("Caro", "Yes! We took the night train and woke up in Vienna."),
        ("Mel", "My kids have been obsessed with dinosaurs lately."),
        ("Caro", "I adopted a rescue greyhound last spring."),
        ("Mel", "We repainted the kitchen a soft yellow."),
    ])
    hits = memory_search(tenant=tenant_a, subject_ref="alice", query="Where did Caro go for her anniversary?", k=3)
    found = [h.memory.pk for h in hits]
    assert memories[1].pk in found[:2]
    answer = next(h for h in hits if h.memory.pk == memories[1].pk)
    assert answer.details["neighbour"] > 0


def test_neighbours_never_come_from_another_subject_or_tenant(tenant_a, tenant_b, actor):
    # The same conversation stored for another subject and another tenant: their memories must
    # neither appear nor lend neighbour credit.
    conversation(tenant_a, "bob", actor, [("Mel", "Where did you go for the anniversary?"),
                                          ("Caro", "We went to Vienna.")])
    conversation(tenant_b, "alice", actor, [("Mel", "Where did you go for the anniversary?"),
                                            ("Caro", "We went to Vienna.")])
    own = conversation(tenant_a, "alice", actor, [("Caro", "We went to Vienna.")])
    hits = memory_search(tenant=tenant_a, subject_ref="alice", query="Where did they go for the anniversary?", k=10)
    assert [h.memory.pk for h in hits] == [own[0].pk]
    assert hits[0].details["neighbour"] == 0


def test_another_tenant_and_another_subject_get_nothing(tenant_a, tenant_b, actor):
    write(tenant_a, "alice", "My locker code is behind the blue door.", actor)
    assert memory_search(tenant=tenant_b, subject_ref="alice", query="locker code blue door", k=5) == []
    assert memory_search(tenant=tenant_a, subject_ref="bob", query="locker code blue door", k=5) == []


def test_superseded_neighbour_gives_no_credit_for_current_queries(tenant_a, actor):
    memories = conversation(tenant_a, "alice", actor, [
        ("Caro", "I live in Porto near the river."),
        ("Caro", "The view is lovely."),
    ])
    write(tenant_a, "alice", "I moved to Oslo.", actor, valid_from=T0 + timedelta(days=30),
          ).memory  # noqa: B018 (an unrelated current fact keeps the scope non-trivial)
    from memoryapp.services.memories import memory_correct
    memory_correct(tenant=tenant_a, memory=memories[0], statement="Caro: I used to live in Porto.", actor=actor,
                   valid_from=T0 + timedelta(days=30))
    hits = memory_search(tenant=tenant_a, subject_ref="alice", query="Where does Caro live, Porto?", k=10)
    assert memories[0].pk not in [h.memory.pk for h in hits]
    view = next(h for h in hits if h.memory.pk == memories[1].pk)
    assert view.details["neighbour"] == 0


def test_an_episode_after_a_question_gets_that_questions_match_one_way_only():
    # 1 asks what the query asks; 0 and 2 are its neighbours, equally weak on their own; 2 replies.
    sig = signals(sims=[0.3, 0.9, 0.3, 0.3], bm25=[0.0, 4.0, 0.0, 0.0], seqs=[1, 2, 3, 4])
    sig.is_episode = np.array([True, True, True, True])
    sig.asks = np.array([False, True, False, False])
    scores, parts = relevance_scores(sig, query_understand("x"))
    base = RELEVANCE["dense"] * parts["dense"] + RELEVANCE["text"] * parts["text"]
    assert parts["answer"][2] == pytest.approx(base[1]) and parts["answer"][[0, 1, 3]].tolist() == [0, 0, 0]
    assert scores[2] > scores[0]
    without, _ = relevance_scores(sig, query_understand("x"), {**RELEVANCE, "answer": 0})
    assert without[2] == pytest.approx(without[0])
    # A statement is no question: its successor gets nothing, and then the scale is the old one.
    sig.asks, sig.answers = np.array([False] * 4), None
    scores, parts = relevance_scores(sig, query_understand("x"))
    assert not parts["answer"].any()
    assert scores == pytest.approx(relevance_scores(sig, query_understand("x"), {**RELEVANCE, "answer": 0})[0])
    # Nor does an untrusted question lend anything (a web page's text), nor a reply's fact get it.
    sig.asks, sig.untrusted, sig.answers = np.array([False, True, False, False]), np.array([False, True, False, False]), None
    assert not relevance_scores(sig, query_understand("x"))[1]["answer"].any()
    sig.untrusted, sig.is_episode, sig.answers = np.zeros(4, bool), np.array([True, True, False, True]), None
    assert not relevance_scores(sig, query_understand("x"))[1]["answer"].any()
    # ... nor across sessions, nor from a fact that asks.
    other = signals(sims=[0.9, 0.3, 0.9, 0.3], bm25=[4.0, 0.0, 4.0, 0.0], seqs=[1, 2, 5, 6], sessions=["a", "b", "a", "a"])
    other.is_episode, other.asks = np.array([True, True, False, True]), np.array([True, False, True, False])
    assert relevance_scores(other, query_understand("x"))[1]["answer"].tolist() == [0, 0, 0, 0]


def test_the_reply_to_a_question_like_the_query_is_found_though_it_shares_no_word(tenant_a, actor, monkeypatch):
    turns = [
        ("Tim", "I've been learning so much at school lately, it keeps me busy."),
        ("John", "Learning an instrument is really cool. Which instrument are you learning?"),
        ("Tim", "The violin! Mostly classical pieces so far, and some jazz."),
        ("John", "Nice. I went to a game with my brother last week."),
    ]
    memories = conversation(tenant_a, "chat", actor, turns)
    conversation(tenant_a, "chat", actor, [("John", "I'm learning to cook pasta."), ("Tim", "Cooking is fun.")],
                 session="s2", start=T0 + timedelta(days=3))

    def rank(of):
        hits = memory_search(tenant=tenant_a, subject_ref="chat", query="Which instrument is Tim learning?", k=10)
        return [h.memory.pk for h in hits].index(of.pk)

    assert rank(memories[2]) < rank(memories[0])
    monkeypatch.setitem(RELEVANCE, "answer", 0)
    assert rank(memories[2]) > rank(memories[0])


@pytest.mark.parametrize("text, asks", [
    ("Which instrument are you learning?", True),
    ("Really? Anyway, I adopted a cat.", True),
    ('She asked "why?" and left.', True),
    ("Which one？", True),
    ("Watch https://video.example/watch?v=abc123 tonight.", False),
    ("I adopted a cat.", False),
])
def test_a_memory_asks_something_when_a_question_mark_ends_a_clause(tenant_a, actor, text, asks):
    memory = write(tenant_a, "alice", text, actor).memory
    with transaction.atomic():
        tenant_activate(tenant=tenant_a)
        now = datetime.now(timezone.utc)
        sig = search_signals(tenant=tenant_a, subject_ref="alice", query="x", query_embedding=embeddings.embed_text("x", partition=None),
                             as_of=now, now=now, statuses=[Memory.Status.ACTIVE], include_superseded=False)
    assert sig.ids == [memory.pk] and bool(sig.asks[0]) is asks
