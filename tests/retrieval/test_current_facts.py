"""The current fact first, for attributes no extraction rule knows: the query is matched as the
person says things, one person's consecutive remarks do not lend each other a question's match,
a lone common word is not a full text match, a later statement that says the fact changed
answers before the older one, and a question nothing stored answers is told so."""
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from memoryapp.context import NOTHING_RELEVANT, context_build
from memoryapp.query import query_in_first_person, query_understand
from memoryapp.retrieval import RELEVANCE, Signals, memory_search, passage_similarity, relevance_scores
from tests.conftest import as_tenant
from tests.workers.helpers import ingest

T0 = datetime(2025, 2, 3, 10, 0, tzinfo=timezone.utc)


def _signals(sims, bm25, seqs, roles, speakers=None, bm25_ideal=0.0):
    n = len(sims)
    return Signals(
        ids=list(range(n)), sim=np.array(sims, float), bm25=np.array(bm25, float),
        session=["s"] * n, seq=seqs, speaker=speakers or [""] * n,
        has_time=np.zeros(n, bool), age_days=np.zeros(n), importance=np.full(n, 0.5),
        confidence=np.ones(n), untrusted=np.zeros(n, bool), is_episode=np.ones(n, bool),
        role=roles, bm25_ideal=bm25_ideal,
    )


@pytest.mark.parametrize("query,expected", [
    ("Where does the user live?", "Where does I live?"),
    ("What is the user's job?", "What is my job?"),
    ("Which car do you drive?", "Which car do I drive?"),
    ("Is that bike yours?", "Is that bike mine?"),
    ("Who is the users' dentist?", "Who is my dentist?"),
    ("How does the username field work?", "How does the username field work?"),  # not a reference
    ("You're vegan, aren't you?", "I'm vegan, aren't I?"),
    ("Where are you based these days?", "Where am I based these days?"),
    ("Were you ever in Lisbon?", "Was I ever in Lisbon?"),
    ("What you'd order there", "What I'd order there"),
])
def test_a_query_about_the_subject_is_matched_in_the_first_person(query, expected):
    assert query_in_first_person(query) == expected


def test_one_persons_consecutive_remarks_share_no_passage_but_a_reply_does():
    # 1 matches the query; 0 is the same person's remark before it; 2 is another voice replying.
    alone = _signals(sims=[0.1, 0.9, 0.1], bm25=[0, 0, 0], seqs=[1, 2, 3], roles=["user", "user", "assistant"])
    passage = passage_similarity(alone)
    same_voice, reply = passage[0], passage[2]
    assert reply > same_voice
    # Without roles (signals from before roles were read) every neighbour counts as before.
    legacy = _signals(sims=[0.1, 0.9, 0.1], bm25=[0, 0, 0], seqs=[1, 2, 3], roles=None)
    assert passage_similarity(legacy)[0] > same_voice


def test_a_lone_common_word_is_not_a_full_text_match():
    sig = _signals(sims=[0.5, 0.5], bm25=[1.0, 0.0], seqs=[1, 5], roles=["user", "user"], bm25_ideal=10.0)
    _, parts = relevance_scores(sig, query_understand("which office does the user work from"), RELEVANCE)
    assert parts["text"][0] == pytest.approx(1.0 / (RELEVANCE["text_floor"] * 10.0))
    # Without the floor the best match in scope, however partial, was a perfect one.
    _, floorless = relevance_scores(sig, query_understand("x"), {**RELEVANCE, "text_floor": 0})
    assert floorless["text"][0] == 1.0


# A history around the facts: the later statement is told apart from the rest of a person's
# memories, so a test needs a person with some.
FILLER = [
    "The weather was grey all weekend.", "We watched a documentary about octopuses.",
    "My sister visits next Tuesday.", "Work has been busy with the quarterly review.",
    "The neighbours' dog barked half the night.", "I finally fixed the leaking tap in the bathroom.",
    "Our team won the pub quiz on Thursday.", "I'm reading a novel set in 1920s Shanghai.",
    "The train was delayed forty minutes this morning.", "We planted tomatoes and basil on the balcony.",
    "My laptop battery barely lasts two hours now.", "I booked a dentist appointment for March.",
    "The kids built a fort out of couch cushions.", "I tried a new ramen place near the station.",
    "Our landlord is repainting the stairwell.", "I lost my umbrella on the bus again.",
    "We're thinking about a trip to the coast in summer.", "The heating broke during the cold snap.",
    "I spent Sunday sorting old photos.", "My friend Tomas just got engaged.",
    "The library extended its opening hours.", "I watched the football final with my cousins.",
    "My phone screen cracked when I dropped it.", "We adopted a routine of Friday pizza nights.",
]


@pytest.mark.django_db
@pytest.mark.parametrize("old,new,query", [
    ("I play the cello in a community orchestra.",
     "I gave up the cello last month, I play the drums in a garage band these days.",
     "What instrument does the user play?"),
    ("My go-to coffee order is a flat white with oat milk.",
     "I switched my coffee order to a black americano, no milk anymore.",
     "What coffee does the user order?"),
])
def test_a_later_statement_that_the_fact_changed_answers_first(tenant_a, actor, old, new, query):
    turns = [old, *FILLER[:12], new, *FILLER[12:]]
    ingest(tenant_a, "alice", actor, *[
        (f"e{i}", "user", text, None, T0 + timedelta(days=20 * i)) for i, text in enumerate(turns)])
    with as_tenant(tenant_a):
        hits = memory_search(tenant=tenant_a, subject_ref="alice", query=query, k=5)
        with_history = memory_search(tenant=tenant_a, subject_ref="alice", query=query, k=5,
                                     include_superseded=True)
    new_first = hits[0].memory.source_event.content
    assert new_first == new, [(h.memory.statement, h.details) for h in hits]
    # The older statement stays findable right after it, marked as answered by the newer one.
    assert any(h.memory.source_event.content == old and "answered_later_by" in h.details for h in hits)
    assert all("answered_later_by" not in h.details for h in with_history)
    # Between the two statements, the older one was the answer.
    with as_tenant(tenant_a):
        then = memory_search(tenant=tenant_a, subject_ref="alice", query=query, k=5, as_of=T0 + timedelta(days=20 * 13 - 1))
    assert then[0].memory.source_event.content == old
    assert all(h.memory.source_event.content != new for h in then)


@pytest.mark.django_db
def test_an_explicit_write_without_a_key_that_changes_a_preference_answers_first(tenant_a, actor):
    from memoryapp.services.memories import MemoryDraft, memory_write

    statements = [(FILLER[i], T0 + timedelta(days=i)) for i in range(12)]
    statements += [("I prefer coffee in the morning.", T0 + timedelta(days=20)),
                   ("These days I prefer green tea in the morning instead.", T0 + timedelta(days=60))]
    for text, when in statements:  # what a client that never sends a key writes (mem0's, MCP's)
        memory_write(tenant=tenant_a, subject_ref="alice", actor=actor,
                     draft=MemoryDraft(statement=text, valid_from=when))
    with as_tenant(tenant_a):
        hits = memory_search(tenant=tenant_a, subject_ref="alice", query="What does the user drink in the morning?",
                             k=3)
    assert "green tea" in hits[0].memory.statement, [(h.memory.statement, h.details) for h in hits]
    assert any("coffee" in h.memory.statement for h in hits)  # history stays findable


@pytest.mark.django_db
def test_a_later_remark_without_a_change_word_does_not_displace_the_answer(tenant_a, actor):
    ingest(tenant_a, "alice", actor,
           ("e0", "user", "I play the cello in a community orchestra.", None, T0),
           ("e1", "user", "The orchestra's concert hall has terrible acoustics.", None, T0 + timedelta(days=30)))
    with as_tenant(tenant_a):
        hits = memory_search(tenant=tenant_a, subject_ref="alice", query="What instrument does the user play?",
                             k=3)
    assert "cello" in hits[0].memory.statement
    assert all("answered_later_by" not in h.details for h in hits)


@pytest.mark.django_db
def test_a_question_nothing_stored_answers_is_told_so(tenant_a, actor):
    ingest(tenant_a, "alice", actor,
           ("e0", "user", "I play the cello in a community orchestra.", None, T0),
           ("e1", "user", "My sister lives in Porto.", None, T0 + timedelta(days=1)))
    with as_tenant(tenant_a):
        unanswerable = context_build(tenant=tenant_a, subject_ref="alice",
                                     query="What is the boiling point of tungsten in kelvin?", token_budget=500)
        answerable = context_build(tenant=tenant_a, subject_ref="alice",
                                   query="Which instrument does the user play?", token_budget=500)
    assert unanswerable["nothing_relevant"] and unanswerable["memories"] == []
    assert unanswerable["context"] == NOTHING_RELEVANT
    assert not answerable["nothing_relevant"] and "cello" in answerable["context"]


def test_an_untrusted_later_statement_never_takes_a_trusted_answers_place():
    from memoryapp.retrieval import answered_later

    sig = _signals(sims=[0.9, 0.8], bm25=[0, 0], seqs=[1, 9], roles=["user", "user"])
    sig.valid_from_days = np.array([1.0, 50.0])
    sig.tells_change = np.array([False, True])
    sig.untrusted = np.array([False, True])  # a forwarded email: "I no longer ..."
    order, later = answered_later(tenant=None, sig=sig, order=np.array([0, 1]))
    assert list(order) == [0, 1] and later == {}


@pytest.mark.django_db
def test_the_pools_vectors_come_back_as_stored(tenant_a, actor):
    # answered_later compares the pool's vectors, read in pgvector's binary form.
    from memoryapp import retrieval
    from memoryapp.models import Memory
    from memoryapp.services.memories import MemoryDraft, memory_write

    for text in ("I prefer coffee in the morning.", "My sister lives in Porto."):
        memory_write(tenant=tenant_a, subject_ref="alice", actor=actor, draft=MemoryDraft(statement=text))
    with as_tenant(tenant_a):
        stored = {m.id: (np.asarray(m.embedding, dtype=np.float32), m.statement)
                  for m in Memory.objects.filter(tenant=tenant_a)}
        rows = retrieval._pool_rows(tenant=tenant_a, ids=list(stored))
    assert set(rows) == set(stored)
    for memory_id, (vector, statement) in rows.items():
        assert statement == stored[memory_id][1]
        assert np.array_equal(vector, stored[memory_id][0]) and vector.shape == (retrieval.embeddings.DIMENSIONS,)


def _near_pair(monkeypatch, *, episodes: bool, impersonal: bool = False):
    """Four hits: the best (0), a later statement right behind it saying much the same thing (1),
    asking something and saying nothing of its speaker if `impersonal`, and two unrelated ones;
    the vectors come from the pool's lookup, as in a search."""
    from memoryapp import retrieval

    sig = _signals(sims=[0.9, 0.85, 0.5, 0.4], bm25=[0] * 4, seqs=[1, 30, 5, 9], roles=["user"] * 4)
    sig.valid_from_days = np.array([1.0, 40.0, 2.0, 3.0])
    sig.tells_change = np.zeros(4, bool)  # no word of change anywhere
    sig.is_episode = np.full(4, episodes)
    sig.impersonal = np.array([False, impersonal, False, False])
    sig.key = [""] * 4
    basis = np.eye(retrieval.embeddings.DIMENSIONS)
    vectors = [basis[0] + basis[1], basis[0] + 0.9 * basis[1] + 0.2 * basis[2], basis[3], basis[4]]
    monkeypatch.setattr(retrieval, "_pool_rows", lambda *, tenant, ids: {
        i: (np.asarray(vectors[i], dtype=np.float32), f"statement {i}") for i in ids})
    return retrieval.answered_later(tenant=None, sig=sig, order=np.array([0, 1, 2, 3]))


def test_a_later_message_right_behind_the_answer_that_says_the_same_thing_answers_first(monkeypatch):
    order, later = _near_pair(monkeypatch, episodes=True)
    assert list(order[:2]) == [1, 0] and later == {0: 1}


def _cued_behind(monkeypatch, *, place: int, cue: bool, sims=(0.9, 0.8, 0.7, 0.6, 0.5, 0.4), asks: bool = False):
    """Six hits: the best (0), and at `place` a later message of the same person that is only a
    little like it (centred cosine ~0.22, under SUPERSESSION["similar"]), saying that something
    changed or not, asking something or not; the others are earlier and unrelated."""
    from memoryapp import retrieval

    n = 6
    sig = _signals(sims=list(sims), bm25=[0] * n, seqs=[1, 3, 5, 30, 7, 9], roles=["user"] * n)
    sig.is_episode = np.ones(n, bool)
    sig.asks = np.zeros(n, bool)
    sig.asks[place] = asks
    sig.valid_from_days = np.array([10.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    sig.valid_from_days[place] = 40.0
    sig.tells_change = np.zeros(n, bool)
    sig.tells_change[place] = cue
    sig.key = [""] * n
    basis = np.eye(retrieval.embeddings.DIMENSIONS)
    unrelated = iter([basis[5], basis[6], basis[8], basis[9]])
    vectors = [basis[0] + basis[1] if i == 0 else basis[0] + basis[2] if i == place else next(unrelated)
               for i in range(n)]
    centred = np.array(vectors) - np.mean(vectors, axis=0)
    centred /= np.linalg.norm(centred, axis=1, keepdims=True)
    likeness = float(centred[0] @ centred[place])
    assert retrieval.SUPERSESSION["cued_similar"] <= likeness < retrieval.SUPERSESSION["similar"]
    monkeypatch.setattr(retrieval, "_pool_rows", lambda *, tenant, ids: {
        i: (np.asarray(vectors[i], dtype=np.float32), f"statement {i}") for i in ids})
    return retrieval.answered_later(tenant=None, sig=sig, order=np.arange(n))


def test_a_later_message_saying_it_changed_close_behind_the_answer_answers_first(monkeypatch):
    # "book us a table for quiz night, under the team name Les Quizerables" / three hits down,
    # "we play as The Smarty Pints instead": little alike, but a change said close behind.
    order, later = _cued_behind(monkeypatch, place=3, cue=True)
    assert list(order[:2]) == [3, 0] and later == {0: 3}


@pytest.mark.parametrize("place,cue", [(3, False), (4, True)])
def test_a_little_alike_later_message_without_a_change_word_or_further_down_does_not(monkeypatch, place, cue):
    order, later = _cued_behind(monkeypatch, place=place, cue=cue)
    assert list(order) == list(range(6)) and later == {}


def test_a_little_alike_later_statement_right_behind_the_answer_answers_first(monkeypatch):
    # "first wordle guess: CARTE" / right behind it, later: "SLATE is the opener for this year's
    # wordle streak": no word of change, little alike, but next in line and matching the query
    # nearly as well.
    order, later = _cued_behind(monkeypatch, place=1, cue=False, sims=(0.9, 0.8, 0.7, 0.6, 0.5, 0.4))
    assert list(order[:2]) == [1, 0] and later == {0: 1}


@pytest.mark.parametrize("sims,asks", [
    ((0.9, 0.4, 0.35, 0.3, 0.25, 0.2), False),  # it matches the query much less well
    ((0.9, 0.8, 0.7, 0.6, 0.5, 0.4), True),     # it asks something ("is SLATE a good opener?")
])
def test_a_little_alike_later_message_right_behind_that_matches_less_or_asks_does_not(monkeypatch, sims, asks):
    order, later = _cued_behind(monkeypatch, place=1, cue=False, sims=sims, asks=asks)
    assert list(order) == list(range(6)) and later == {}


def test_a_later_fact_right_behind_another_is_not_taken_for_a_new_version_of_it(monkeypatch):
    # "The user is allergic to peanuts" / "The user's daughter is allergic to cats": facts are
    # not one person's messages, and close vectors alone do not make them the same question.
    order, later = _near_pair(monkeypatch, episodes=False)
    assert list(order) == [0, 1, 2, 3] and later == {}


def test_a_question_that_says_nothing_of_the_person_never_answers_in_place_of_their_statement(monkeypatch):
    # "the hoover we have is a Vax" / right behind it, later: "are cordless hoovers any good" --
    # much alike, same person, but it states nothing of theirs.
    def first_two(impersonal):
        order, later = _near_pair(monkeypatch, episodes=True, impersonal=impersonal)
        return list(order[:2]), later

    assert first_two(impersonal=True) == ([0, 1], {})
    assert first_two(impersonal=False) == ([1, 0], {0: 1})  # the same pair, as a statement: it answers


CUE_TEXTS = [
    "I no longer eat meat.", "NO LONGER a smoker", "I don't drive anymore", "not any more, thanks",
    "We Switched to oat milk", "switching banks next week", "I changed jobs.", "Moved to Lyon!",
    "relocated for work", "These days I cycle", "nowadays mostly tea", "tea instead of coffee",
    "update: new number", "Updated my address", "I used to run", "took up climbing", "taken up knitting",
    "replaced the car", "gave up sugar", "got rid of the TV",
    # look-alikes: a cue word inside another word, one that only starts like one, punctuation,
    # other scripts (some match, some do not: both readings must agree either way)
    "I moved-in? no", "the mover came", "upgrade the plan", "unchanged since May", "insteadly",
    "my update_id is 4", "anymoreover", "I use two cars", "givenup", "exchanged gifts", "the changes list",
    "Müller switched", "café — no longer open", "l'update", "déménagé, moved", "", "   ",
]


@pytest.mark.django_db
@pytest.mark.parametrize("text", CUE_TEXTS)
def test_change_cues_read_in_python_as_postgresql_reads_them(text):
    # answered_later reads CHANGE_CUES in Python for the few statements it weighs; the pattern
    # is written for PostgreSQL (\y): both must agree on what says that something changed.
    from django.db import connection

    from memoryapp.retrieval import CHANGE_CUES, tells_change

    with connection.cursor() as cursor:
        cursor.execute("SELECT %s ~* %s", [text, CHANGE_CUES])
        in_sql = cursor.fetchone()[0]
    sig = _signals([0.5], [0.0], [0], ["user"])
    sig.statement = [text]
    assert tells_change(sig, 0) == in_sql
