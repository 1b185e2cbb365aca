"""Hybrid retrieval: dense cosine similarity and Okapi BM25 (computed in PostgreSQL over the
subject's own memories), fused by weighted sum, smoothed with the memories of neighbouring
events, then re-scored with recency, importance and confidence.

Scope (tenant, subject, status, validity at `as_of`, expiry, erasure, type, namespace) is applied
in SQL before any ranking, so a filtered-out memory can never appear whatever its score. The
subject's rows are scanned exactly inside a materialised CTE, with no approximate index:
per-subject sets are capped, and an index over every subject's rows filtered after the fact
would silently drop relevant memories (measured for one subject up to 100,000 memories,
docs/benchmarks.md, issue 16). Only the candidates the scan chooses (CANDIDATES) are scored.

Why these pieces (measured on LoCoMo, see docs/benchmarks.md):
- BM25 rather than ts_rank_cd: idf matters when most memories share the subject's vocabulary,
  and ts_rank_cd has none. Statistics (document frequency, average length) are the subject's,
  which is the collection a query is actually asked against.
- Neighbour smoothing: in a conversation the words of a question are often spread over a turn
  and the one before or after it ("Did you go?" / "Yes, to the museum"); a memory whose
  neighbouring events match is more likely to be the answer.
- Answers after questions: in a dialogue the words of a question asked in it ("What instrument
  are you learning?") often match the query, while the information is in the reply ("The
  violin!"). An episode right after one that asks something gets part of that question's
  score, one way only.
- Dates in the query: "What did Tim read on 8 December, 2023?" is about what happened then, and
  no word of the answer says so; a memory that became valid in the named period (or up to
  PERIOD_AFTER_DAYS later, when it was told) is preferred. A boost, not a filter: a wrong date
  in the question must not hide the answer.
"""
import math
import re
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

import numpy as np
from django.conf import settings
from django.utils import timezone

from memoryapp import embeddings
from memoryapp.models import Memory, Tenant, UNTRUSTED_SOURCES
from memoryapp.frames import same_frame
from memoryapp.keyroute import key_weight, keys_for_query
from memoryapp.query import QueryInfo, query_in_first_person, query_match_text, query_understand
from memoryapp.readpolicy import (
    AGENT_DEFAULT, ReadPolicy, below_pattern, namespace_chain, narrowest_sql, policy_sql,
)
from memoryapp.selectors.hits import memories_for_hits
from memoryapp.selectors.memories import subject_speaker_words
from memoryapp.sqlpatterns import like_escape
from memoryapp.tenancy import tenant_activate_and_query

# Relevance weights (tuned on the LoCoMo tune split only; see docs/benchmarks.md).
RELEVANCE = {
    "dense": 1.0,       # cosine similarity of the memory itself
    "passage": 1.0,     # ... blended with the similarity of its passage (itself and adjacent events)
    "dense_scale": "raw",  # cosine as is (min-max scaling within the scope measured worse)
    "text": 0.8,        # BM25, scaled by the best BM25 in the scope
    "neighbour": 0.7,   # the best fused score among memories of events up to `window` away...
    "window": 2,
    "decay": 0.8,       # ... discounted by decay**(distance - 1)
    "speaker": 0.2,     # the query names the person whose event it is
    "time": 0.3,        # a "when" question and a memory that carries a time reference
    "period": 0.7,      # the query names a date, month or year and the memory became valid then
    # The query asks about the attribute the memory is filed under (keyroute.py). 0.5 until the
    # query was matched in the first person (2026-12-01): "the user" no longer matches every
    # derived fact, so the boost alone must outweigh a stem shared by accident ("living" /
    # "lives"); 0.8 is neutral on the blind dev split (55.0% vs 54.8% current at k=1).
    "key": 0.8,
    "answer": 0.35,     # the episode just before asks a question: credit from that question's match
    "text_floor": 1.0,  # BM25 is scaled by at least a whole-query match (relevance_scores)
    # A statement of several clauses: its similarity is blended with its best clause's this
    # much (memoryapp/clauses.py; in SQL, so the pool's pre-score sees it too).
    "clause": 0.5,
    # A person's message that asks about the world and says nothing of them keeps this much less
    # of its relevance (QUESTION_OPENS below says which). Chosen on the dev splits of blind_v4 and
    # blind_v1 (k=1 current 44.4 -> 53.1 % and 59.1 -> 60.9 %) and held to LoCoMo's tune split
    # (R@10 82.8 -> 82.4, R@5 75.3 -> 75.4); 0.65 and 0.8 gained more on blind_v4 and cost
    # LoCoMo more (R@10 82.0 at 0.65; 81.3 at 0.8 measured together with a BM25 gate not kept).
    # 0.65 since 2026-12-04 night, once QUESTION_OPENS told more questions apart: on the dev
    # splits k=1 current 71.2 -> 73.1 % (blind_v6), 75.9 -> 77.5 (v5), 58.1 -> 60.0 (v4), 60.3 ->
    # 60.0 (v1); LoCoMo tune R@10 82.4 -> 82.2, R@50 94.4 -> 93.4 (0.8: no better on dev, R@50 93.0).
    "impersonal": 0.65,
}
# Events are told about at or after they happen ("yesterday I went ..."): a memory that became
# valid up to this many days after a period the query names still counts, decreasingly.
PERIOD_AFTER_DAYS = 14
# Priors added to relevance (kept small: relevance decides, priors break near-ties).
WEIGHTS = {"recency": 0.10, "importance": 0.08, "confidence": 0.07}
UNTRUSTED_FACTOR = 0.8
BM25_K1 = 1.2
BM25_B = 0.75
# The rows scored in Python (choose_pool in the SQL): the CANDIDATES best by a cheap pre-score
# (similarity + BM25 / 10), the CANDIDATES best among the memories filed under an attribute the
# query asks about and among those valid in a period it names (boosts the pre-score does not
# see), and the memories of the events up to NEIGHBOUR_WINDOW around each candidate's, which its
# passage, neighbour and answer signals read. BM25's statistics stay the whole scope's. Chosen
# on bench/search_at_cap.py: at 10,000 memories the top 10 agree with scoring every memory, at a
# tenth of the cost (docs/benchmarks.md, issue 16). A new boost that can lift a memory the
# pre-score ranks low must add its memories to the candidates the same way.
CANDIDATES = 100

@dataclass
class SearchHit:
    memory: Memory
    score: float
    details: dict = field(default_factory=dict)


_SQL = """
WITH q AS (SELECT %(qvec)s::vector AS v),
-- Every in-scope memory, with only what the statistics and the choice of candidates need: the
-- per-row work that only the returned rows need (the event, the regular expressions) waits
-- for the pool (at 10,000 memories the change-cue expression alone took ~350 ms a search).
scope AS MATERIALIZED (
    SELECT m.id,
           -- The statement's similarity, blended with its best clause's when it has several
           -- (memoryapp/clauses.py): a fact said in passing is found by its own clause.
           CASE WHEN m.clause_embeddings IS NULL THEN coalesce(1 - (m.embedding <=> q.v), 0)
                ELSE (1 - %(clause_weight)s) * coalesce(1 - (m.embedding <=> q.v), 0)
                     + %(clause_weight)s * coalesce((SELECT max(1 - (c <=> q.v)) FROM unnest(m.clause_embeddings) c),
                                                    1 - (m.embedding <=> q.v), 0)
           END AS sim,
           m.search_vector, m.has_time_reference, m.valid_from, m.subject_id, m.source_event_id,
           m.importance, m.confidence, m.source_kind, m.key, m.memory_type = 'episodic' AS is_episode,
           m.statement, length(m.search_vector)::float8 AS dl
    FROM memoryapp_memory m CROSS JOIN q
    {known_join}
    WHERE m.tenant_id = %(tenant)s AND m.subject_id = {subject} AND NOT m.erasing
      {known_filter}
      AND {status} = ANY(%(statuses)s)
      AND m.valid_from <= %(as_of)s
      AND (%(all_versions)s OR {valid_to} IS NULL OR {valid_to} > %(as_of)s)
      AND (m.expires_at IS NULL OR m.expires_at > %(known_at)s)
      {extra}
),
qterms AS (
    SELECT lexeme, coalesce(array_length(positions, 1), 1)::float8 AS qtf
    FROM unnest(to_tsvector('english', %(query)s))
),
-- BM25's statistics are the whole scope's, whichever rows come back.
stats AS (
    SELECT count(*)::float8 AS n, greatest(avg(dl), 1)::float8 AS avgdl FROM scope
),
-- Any of the query's lexemes as a text-search query ('a' | 'b', with quotes and backslashes
-- doubled inside the quotes); with none, NULL, which matches nothing.
qany AS (
    SELECT string_agg('''' || replace(replace(lexeme, '\\', '\\\\'), '''', '''''') || '''', ' | ')::tsquery AS q
    FROM qterms
),
tf AS (
    SELECT s.id, t.lexeme, q.qtf, coalesce(array_length(t.positions, 1), 1)::float8 AS tf, s.dl
    FROM scope s CROSS JOIN LATERAL unnest(s.search_vector) t JOIN qterms q ON q.lexeme = t.lexeme
    -- Unnest only the memories that share a lexeme with the query (most share none): @@ looks
    -- the lexemes up in the stored tsvector; comparing arrays built one per row, which cost ~2
    -- ms a search at 10,000 memories.
    WHERE s.search_vector @@ (SELECT q FROM qany)
),
df AS (SELECT lexeme, count(*)::float8 AS df FROM tf GROUP BY lexeme),
bm25 AS (
    SELECT tf.id, sum(
        tf.qtf * ln((stats.n - df.df + 0.5) / (df.df + 0.5) + 1)
        * tf.tf * (%(k1)s + 1) / (tf.tf + %(k1)s * (1 - %(b)s + %(b)s * tf.dl / stats.avgdl))
    ) AS score
    FROM tf JOIN df USING (lexeme) CROSS JOIN stats
    GROUP BY tf.id
),
-- What a memory holding every query term once, at average length, would score: the scale that
-- says how much of the query the best match in scope actually covers.
ideal AS (
    SELECT coalesce(sum(q.qtf * ln((stats.n - coalesce(df.df, 0) + 0.5) / (coalesce(df.df, 0) + 0.5) + 1)), 0)
           AS score
    FROM qterms q LEFT JOIN df USING (lexeme) CROSS JOIN stats
),
-- Outside BM25's matches (most of the scope) a memory's pre-score is its similarity alone, so
-- the best by either pre-score are among those matches and the best by similarity (with the
-- priors): only they, and the rows a boost's candidates come from, are joined to BM25, kept and
-- sorted (~1–2 ms a search at 10,000 memories; the two top-N sorts still read every row). Exact
-- because BM25 is never negative and pre_scale is positive: no row outside these can rank above
-- one inside, and for a row without BM25 both forms compute the same expression.
ranked AS MATERIALIZED (
    SELECT s.id, s.source_event_id, s.key, s.valid_from, s.sim + coalesce(bm25.score, 0) / 10 AS pre,
           coalesce(bm25.score, 0) AS bm25,
           -- the priors (recency, importance, confidence) beside the pre-score in relevance's
           -- units: among near-equals, as a subject at its cap holds many, they decide
           (s.sim + coalesce(bm25.score, 0) / 10) * %(pre_scale)s + {prior} AS pre_prior
    FROM scope s LEFT JOIN bm25 ON bm25.id = s.id
    WHERE bm25.id IS NOT NULL
       OR s.id IN (SELECT s.id FROM scope s ORDER BY s.sim DESC, s.id LIMIT %(top)s)
       OR s.id IN (SELECT s.id FROM scope s ORDER BY s.sim * %(pre_scale)s + {prior} DESC, s.id LIMIT %(top)s)
       {keyed_rows}
       {dated_rows}
),
-- The candidates (CANDIDATES): the best by the cheap pre-score, by the pre-score with the
-- priors, and among the memories a boost of the query's lifts (filed under an attribute it
-- asks about, valid in a period it names), which the pre-score does not see.
chosen AS (
    (SELECT id, source_event_id FROM ranked ORDER BY pre DESC, id LIMIT %(top)s)
    UNION
    (SELECT id, source_event_id FROM ranked ORDER BY pre_prior DESC, id LIMIT %(top)s)
    {keyed}
    {dated}
),
-- ... and the memories of the events around theirs (same session, up to one more than the
-- neighbour window away), from which their passage, neighbour and answer signals are computed:
-- the one more gives a neighbour at the window's edge its own passage too.
-- (Lateral lookups, OFFSET 0 keeping them so: a few hundred index probes, where a join would
-- hash all of the subject's events.)
-- They carry what the final select reads of an event: every pool row's event is among them (a
-- candidate's own event is at distance 0 in its session), so it is not looked up again.
-- (The window's bounds are computed in the outer lookup: under row-level security PostgreSQL 15
-- uses no index condition holding arithmetic, which may raise (int8 "-" is not leakproof), so
-- "seq BETWEEN e.seq - 3 AND ..." read all of the subject's events for each candidate: 2.8 s a
-- search at 100,000 memories, 0.5 s with the bounds as values.)
near AS (
    SELECT DISTINCT n.id, n.subject_id, n.session_id, n.seq, n.speaker, n.role
    FROM chosen c
    CROSS JOIN LATERAL (SELECT e.subject_id, e.session_id, e.seq - %(window)s AS low, e.seq + %(window)s AS high
                        FROM memoryapp_event e
                        WHERE e.id = c.source_event_id AND e.tenant_id = %(tenant)s OFFSET 0) e
    CROSS JOIN LATERAL (SELECT n.id, n.subject_id, n.session_id, n.seq, n.speaker, n.role FROM memoryapp_event n
                        WHERE n.tenant_id = %(tenant)s AND n.subject_id = e.subject_id
                          AND n.seq BETWEEN e.low AND e.high
                          AND n.session_id = e.session_id OFFSET 0) n
),
-- (Read from the scope, with BM25 joined back by hash, not from ranked: joining the two
-- wide CTEs sorted every row in scope by id, ~10 ms at 10,000 memories.)
pool AS MATERIALIZED (
    SELECT s.*, s.sim + coalesce(b.score, 0) / 10 AS pre, coalesce(b.score, 0) AS bm25,
           -- asks something: a question mark ending a clause (not one inside a URL's query)
           s.statement ~ '[?？؟]([[:space:]"'')]|$)' AS asks
    FROM scope s LEFT JOIN bm25 b ON b.id = s.id
    WHERE s.id IN (SELECT id FROM chosen) OR s.source_event_id IN (SELECT id FROM near)
)
SELECT p.id, p.sim, p.bm25, e.session_id, e.seq, e.speaker,
       p.has_time_reference,
       date_part('epoch', p.valid_from) / 86400 AS valid_from_days,
       p.importance, p.confidence, p.source_kind, p.is_episode, p.key,
       -- A memory nobody said (an explicit fact) names the person the match left out instead.
       CASE WHEN coalesce(e.speaker, '') = '' AND %(named)s::text IS NOT NULL THEN coalesce(
           tsvector_to_array(p.search_vector) && (SELECT array_agg(lexeme) FROM unnest(to_tsvector('english', %(named)s))),
           false) ELSE false END AS names_them,
       p.asks, e.role, (SELECT score FROM ideal) AS bm25_ideal,
       -- asks something, and says nothing of whoever asks (QUESTION_OPENS, SELF_WORDS)
       -- (a CASE, so the regular expressions run in this order, and on the person's own
       -- messages only: an assistant's "what's your dog called?" is about the person)
       CASE WHEN NOT p.is_episode OR e.role IS DISTINCT FROM 'user' THEN false
            WHEN p.asks OR p.statement ~* %(question_opens)s
            THEN p.statement !~* %(self_words)s ELSE false END AS impersonal,
       p.statement
FROM pool p
-- A memory's source event, as near read it, and only if it belongs to the memory's subject.
LEFT JOIN near e ON e.id = p.source_event_id AND e.subject_id = p.subject_id
ORDER BY p.pre DESC, p.id
"""


@dataclass
class Signals:
    """Per-memory raw signals for one query, as numpy arrays aligned with `ids`."""

    ids: list
    sim: np.ndarray
    bm25: np.ndarray
    session: list
    seq: list
    speaker: list
    has_time: np.ndarray
    age_days: np.ndarray  # how long before as_of each became valid, in days (for recency)
    importance: np.ndarray
    confidence: np.ndarray
    untrusted: np.ndarray
    ctx_sim: np.ndarray | None = None  # similarity of the passage around it (itself when it has none)
    pairs: tuple | None = None  # neighbour index pairs, computed on first use
    key: list | None = None  # the normalised key each memory is filed under ("" when none)
    is_episode: np.ndarray | None = None  # an event's episodic memory (the passage is built from these)
    names_them: np.ndarray | None = None  # no speaker, but names a person the match left out (search_terms)
    valid_from_days: np.ndarray | None = None  # when each became valid, in days since the Unix epoch
    asks: np.ndarray | None = None  # its text asks something (a "?" that ends a clause)
    answers: tuple | None = None  # (answer, question) index pairs, computed on first use
    voice_of: dict | None = None  # _voices' answer, computed on first use (passage and neighbours read it)
    role: list | None = None  # the source event's role ("user", "assistant", ...; None: no event)
    bm25_ideal: float = 0.0  # BM25 of a memory holding each query term once at average length
    tells_change: np.ndarray | None = None  # its text says something changed (CHANGE_CUES); else read from statement
    impersonal: np.ndarray | None = None  # asks something and says nothing of its speaker
    statement: list | None = None  # its text


def _vector_literal(vector: np.ndarray) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in vector.tolist()) + "]"


# The priors in relevance's units, for the scope's row `s`.
# (date_part, a float, not extract, a numeric: numeric arithmetic on every row in scope cost ~2 ms
# a search at 10,000 memories, measured side by side.) (The exponent held above -700: PostgreSQL's
# exp() raises on underflow, and a memory valid since centuries ago, or a short half-life, would
# fail the search.)
_PRIOR = """(%(w_recency)s * exp(-least(ln(2) * greatest(date_part('epoch', %(as_of)s - s.valid_from) / 86400, 0)
                                     / %(half_life)s, 700))
     + %(w_importance)s * s.importance + %(w_confidence)s * s.confidence)"""
# Candidates among the memories under the attributes the query asks about (keyroute.key_weight:
# the key itself or its family), and among those valid in the periods it names (period_match).
_KEYED_ROW = ("(s.key = ANY(%(keys)s) OR (s.key LIKE ANY(%(families)s)"
              " AND regexp_replace(s.key, '[^:]*$', '') = ANY(%(keys)s)))")
_DATED_ROW = ("EXISTS (SELECT 1 FROM unnest(%(period_from)s::timestamptz[], %(period_to)s::timestamptz[]) p(a, z)"
              " WHERE s.valid_from >= p.a AND s.valid_from < p.z)")
_KEYED = f"UNION (SELECT id, source_event_id FROM ranked s WHERE {_KEYED_ROW} ORDER BY pre DESC, id LIMIT %(top)s)"
_DATED = f"UNION (SELECT id, source_event_id FROM ranked s WHERE {_DATED_ROW} ORDER BY pre DESC, id LIMIT %(top)s)"


# A version as known at known_at: the state its first later change replaced (MemoryChange), or
# its current state. Joined only when known_at is given: the lateral lookup costs per scope row.
_AS_KNOWN = {
    "{known_join}": ("LEFT JOIN LATERAL (SELECT c.status, c.valid_to FROM memoryapp_memorychange c"
                     " WHERE c.memory_id = m.id AND c.tenant_id = m.tenant_id AND c.changed_at > %(known_at)s"
                     " ORDER BY c.changed_at, c.id LIMIT 1) was ON true"),
    "{known_filter}": "AND m.recorded_at <= %(known_at)s",
    "{status}": "coalesce(was.status, m.status)",
    "{valid_to}": "(CASE WHEN was.status IS NULL THEN m.valid_to ELSE was.valid_to END)",
}
# Without known_at, no recorded_at bound: another server's clock may run a little ahead of ours.
_AS_NOW = {"{known_join}": "", "{known_filter}": "", "{status}": "m.status", "{valid_to}": "m.valid_to"}

# The subject, found by its external id inside the ranking statement: a missing subject, or one
# being erased, leaves the scope empty (an empty answer), and costs no round trip of its own.
_SUBJECT_BY_REF = ("(SELECT sub.id FROM memoryapp_subject sub WHERE sub.tenant_id = %(tenant)s"
                   " AND sub.external_id = %(subject_ref)s AND sub.status = 'active')")


def _prior_params() -> dict:
    """The weights the SQL's prior-aware candidates use, read from RELEVANCE and WEIGHTS as they
    are: a memory's similarity weighs in its relevance about 1 / (the normalisation without the
    optional boosts)."""
    w = RELEVANCE
    norm = (w["dense"] + w["text"] + w.get("neighbour", 0) * (w["dense"] + w["text"]) + w.get("speaker", 0)
            + w.get("time", 0))
    return {"pre_scale": w["dense"] / norm, "w_recency": WEIGHTS["recency"], "w_importance": WEIGHTS["importance"],
            "w_confidence": WEIGHTS["confidence"], "half_life": float(settings.MEMORY_RECENCY_HALF_LIFE_DAYS)}


def search_signals(*, tenant: Tenant, subject_id: int | None = None, subject_ref: str | None = None, query: str,
                   query_embedding: np.ndarray, as_of: datetime, now: datetime, statuses: list[str],
                   include_superseded: bool, extra_sql: str = "", extra_params: dict | None = None,
                   named: frozenset = frozenset(), known_at: datetime | None = None,
                   keys: tuple = (), periods: tuple = ()) -> Signals:
    """The raw relevance signals of the subject's candidate memories (CANDIDATES), for the
    subject given by pk or by external id. Binds the open transaction to `tenant` in the same
    round trip as the ranking query. `named`: the speakers' names search_terms left out of
    `query`; `keys`: the (key, weight) pairs the query is routed to (keyroute.keys_for_query) and
    `periods` the (start, end) periods it names, whose memories are candidates too."""
    params = dict(extra_params or {})
    params.update(
        tenant=tenant.pk, subject=subject_id, subject_ref=subject_ref, statuses=statuses,
        as_of=as_of, all_versions=include_superseded, known_at=known_at or now,
        now=now, qvec=_vector_literal(query_embedding), query=query[:4000], k1=BM25_K1, b=BM25_B,
        top=CANDIDATES, window=NEIGHBOUR_WINDOW + 1, named=" ".join(sorted(named)) or None,
        self_words=SELF_WORDS, question_opens=QUESTION_OPENS,
        clause_weight=float(RELEVANCE.get("clause", 0.0)), keys=[key for key, _ in keys],
        # the prefixes of the families among them: the regular expression runs on those rows only
        families=[like_escape(key) + "%" for key, _ in keys if key.endswith(":")],
        # a memory valid up to PERIOD_AFTER_DAYS after a period still fits it (period_match)
        period_from=[start for start, _ in periods],
        period_to=[end + timedelta(days=PERIOD_AFTER_DAYS) for _, end in periods],
        **_prior_params(),
    )
    sql = _SQL.replace("{subject}", "%(subject)s" if subject_id is not None else _SUBJECT_BY_REF)
    sql = sql.replace("{prior}", _PRIOR)
    sql = sql.replace("{keyed}", _KEYED if keys else "").replace("{dated}", _DATED if periods else "")
    sql = sql.replace("{keyed_rows}", f"OR {_KEYED_ROW}" if keys else "")
    sql = sql.replace("{dated_rows}", f"OR {_DATED_ROW}" if periods else "")
    for placeholder, text in (_AS_NOW if known_at is None else _AS_KNOWN).items():
        sql = sql.replace(placeholder, text)
    rows = tenant_activate_and_query(tenant=tenant, sql=sql.replace("{extra}", extra_sql), params=params)
    # One pass over the rows to turn them into columns: a k=50 search reads ~700 rows.
    cols = list(zip(*rows)) if rows else [()] * 19
    valid_from_days = np.array(cols[7], dtype=float)
    sig = Signals(
        ids=list(cols[0]),
        sim=np.array(cols[1], dtype=float),
        bm25=np.array(cols[2], dtype=float),
        session=list(cols[3]),
        seq=list(cols[4]),
        speaker=[(v or "").lower() for v in cols[5]],
        has_time=np.array(cols[6], dtype=bool),
        # Scope keeps valid_from <= as_of, so the age is never negative; clipped for rounding.
        age_days=np.maximum(as_of.timestamp() / 86400 - valid_from_days, 0.0),
        importance=np.array(cols[8], dtype=float),
        confidence=np.array(cols[9], dtype=float),
        untrusted=np.array([v in UNTRUSTED_SOURCES for v in cols[10]], dtype=bool),
        is_episode=np.array(cols[11], dtype=bool),
        key=[v or "" for v in cols[12]],
        valid_from_days=valid_from_days,
        names_them=np.array(cols[13], dtype=bool),
        asks=np.array(cols[14], dtype=bool),
        role=list(cols[15]),
        bm25_ideal=float(cols[16][0]) if rows else 0.0,
        impersonal=np.array(cols[17], dtype=bool),
        statement=list(cols[18]),
    )
    sig.ctx_sim = passage_similarity(sig)
    return sig


def period_match(sig: Signals, periods: tuple, after_days: float = PERIOD_AFTER_DAYS) -> np.ndarray:
    """Per memory, how well when it became valid fits the periods a query names: 1 inside one,
    falling linearly to 0 over the `after_days` that follow it (the best over the periods)."""
    out = np.zeros(len(sig.ids))
    if not periods or sig.valid_from_days is None:
        return out
    for start, end in periods:
        start_day, end_day = start.timestamp() / 86400, end.timestamp() / 86400
        late = np.maximum(sig.valid_from_days - end_day, 0.0)
        fit = np.where(sig.valid_from_days >= start_day, np.clip(1.0 - late / after_days, 0.0, 1.0), 0.0)
        np.maximum(out, fit, out=out)
    return out


# An episode's passage similarity is the mean similarity of it and its neighbours, scaled up:
# the cosine of the passage's mean vector is that mean divided by |mean| (under 1 for turns that
# differ), about 1/1.3 for adjacent conversation turns. The mean needs no vectors, so it is
# computed here rather than as a window over 384-d vectors in SQL (~15 ms a search at 700
# memories); on LoCoMo it ranks as the vector passage did (tune R@10 79.4 against 79.3).
PASSAGE_SCALE = 1.3


def _voices(sig: Signals) -> dict | None:
    """(session, seq) -> who said it (role, speaker), for the episodes in scope; None when the
    signals carry no roles (then every neighbour counts, as before voices were read).

    Turns lend to each other only in an exchange between different voices (a question and its
    reply, a remark and its answer): the turns from one to the other are an exchange unless
    exactly one voice said them all. One person's consecutive messages in a chat are separate
    remarks ("I go to Planet Fitness." beside "anyway, any good podcasts?"), while a reply
    carries what the turn before it asked about."""
    if sig.role is None:
        return None
    if sig.voice_of is None:
        sig.voice_of = {(sig.session[i] or "", sig.seq[i]): (sig.role[i] or "", sig.speaker[i])
                        for i in range(len(sig.ids)) if sig.is_episode is not None and sig.is_episode[i]
                        and sig.seq[i] is not None}
    return sig.voice_of


def passage_similarity(sig: Signals) -> np.ndarray:
    """For an episode, PASSAGE_SCALE × the mean similarity of itself and the episodes before and
    after it in its session (in-scope episodes in (seq, id) order: one per event, so the order
    is total and never depends on the query plan). A fact's passage is itself: its episode
    already carries the context. Built from the rows returned, so past POOL memories a passage
    at the pool's edge may miss a neighbour the cheap pre-score left out."""
    out = np.array(sig.sim, dtype=float)
    order = sorted((i for i in range(len(sig.ids)) if sig.is_episode[i] and sig.seq[i] is not None),
                   key=lambda i: (sig.session[i] or "", sig.seq[i], sig.ids[i]))
    if not order:
        return out
    idx = np.array(order)
    sims = np.asarray(sig.sim, dtype=float)[idx]
    sessions = [sig.session[i] or "" for i in order]
    voices = _voices(sig)
    # j and j+1 share a session, and one replies to the other (_voices: no other episode in
    # scope lies between two consecutive ones, so that is their two voices differing)
    same = np.array([a == b for a, b in zip(sessions, sessions[1:])], dtype=bool)
    if voices is not None:
        heard = [voices[(sessions[n], sig.seq[i])] for n, i in enumerate(order)]
        same &= np.array([a != b for a, b in zip(heard, heard[1:])], dtype=bool)
    total, count = sims.copy(), np.ones_like(sims)
    total[1:] += np.where(same, sims[:-1], 0)
    count[1:] += same
    total[:-1] += np.where(same, sims[1:], 0)
    count[:-1] += same
    # An episode with no neighbour in scope is its own passage, as a fact is: unscaled.
    out[idx] = np.where(count > 1, PASSAGE_SCALE * total / count, sims)
    return out


def _scaled(values: np.ndarray) -> np.ndarray:
    lo, hi = float(values.min()), float(values.max())
    if hi - lo < 1e-9:
        return np.zeros_like(values)
    return (values - lo) / (hi - lo)


NEIGHBOUR_WINDOW = 2  # events either side whose memories lend context


class _Positions:
    """Event positions as one integer each: a session's number (given by the caller: the events'
    own sessions for matching neighbours, session or "" for voices, as _voices keys them) times a
    span, plus the seq shifted so that a step of up to NEIGHBOUR_WINDOW either way never reaches
    another session's numbers. The seqs are those of the memories `rows`."""

    def __init__(self, sig: Signals, rows: np.ndarray):
        self.seq = np.array([sig.seq[i] for i in rows], dtype=np.int64)
        self.low = int(self.seq.min())
        self.span = int(self.seq.max()) - self.low + 2 * NEIGHBOUR_WINDOW + 1

    def number(self, session_ids: np.ndarray, seq: np.ndarray) -> np.ndarray:
        return session_ids * self.span + (seq - self.low + NEIGHBOUR_WINDOW)


def _voice_lookup(sig: Signals, voices: dict, rows: np.ndarray, places: _Positions):
    """(the rows' own positions, a function from positions to who said the episode there: a small
    integer, -1 where no episode in scope was said), sessions told apart as _voices tells them."""
    sessions: dict = {}
    speakers: dict = {}
    # Positions computed as one array: numpy scalars one by one cost a few tenths of a ms a search at the cap.
    session_ids = np.array([sessions.setdefault(session, len(sessions)) for session, _ in voices], dtype=np.int64)
    seqs = np.array([seq for _, seq in voices], dtype=np.int64)
    said_by = [speakers.setdefault(voice, len(speakers)) for voice in voices.values()]
    # The last episode of a position wins, as in _voices (a dict keeps a repeated key's last value).
    spoken = dict(zip(places.number(session_ids, seqs).tolist(), said_by))
    heard_at = np.array(sorted(spoken), dtype=np.int64)
    heard_voice = np.array([spoken[p] for p in heard_at.tolist()], dtype=np.int64)
    # A session with no episode in scope gets -1: its positions are negative and meet nothing.
    own = places.number(np.array([sessions.get(sig.session[i] or "", -1) for i in rows], dtype=np.int64), places.seq)

    def voice_at(positions: np.ndarray) -> np.ndarray:
        if not len(heard_at):
            return np.full(len(positions), -1)
        found = np.minimum(np.searchsorted(heard_at, positions), len(heard_at) - 1)
        return np.where(heard_at[found] == positions, heard_voice[found], -1)

    return own, voice_at


def _distinct_voices(heard: np.ndarray) -> np.ndarray:
    """Per row of voice ids (-1: none), how many different voices it holds."""
    heard = np.sort(heard, axis=1)
    new = np.concatenate([np.ones((len(heard), 1), dtype=bool), heard[:, 1:] != heard[:, :-1]], axis=1)
    return ((heard >= 0) & new).sum(axis=1)


def neighbour_pairs(sig: Signals) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(i, j, distance): memory j's source event is `distance` events before or after memory i's,
    in the same session, and the turns between them are an exchange (_voices). Memories without
    a source event have no neighbours. Set-based (numpy): at a subject's cap the ranking sees
    ~700 rows and ~3,000 pairs a search, which a loop over them made ~18 ms of Python (~5 ms now)."""
    none = np.array([], dtype=int)
    rows = np.array([i for i, seq in enumerate(sig.seq) if seq is not None], dtype=int)
    if not len(rows):
        return none, none, none
    places = _Positions(sig, rows)
    sessions: dict = {}  # the events' own sessions: None apart from ""
    at = places.number(np.array([sessions.setdefault(sig.session[i], len(sessions)) for i in rows], dtype=np.int64),
                       places.seq)
    by_position = np.argsort(at, kind="stable")
    placed = at[by_position]
    voices = _voices(sig)
    own, voice_at = _voice_lookup(sig, voices, rows, places) if voices is not None else (None, None)
    left, right, dist, order_of = [], [], [], []
    for d in range(1, NEIGHBOUR_WINDOW + 1):
        for rank, step in enumerate((-d, d)):
            start = np.searchsorted(placed, at + step, "left")
            count = np.searchsorted(placed, at + step, "right") - start
            if voices is not None:
                # The turns from this one to the neighbour: an exchange unless exactly one voice.
                heard = np.stack([voice_at(own + (t if step > 0 else -t)) for t in range(d + 1)], axis=1)
                count = np.where(_distinct_voices(heard) != 1, count, 0)
            total = int(count.sum())
            if not total:
                continue
            i = np.repeat(np.arange(len(rows)), count)
            offset = np.arange(total) - np.repeat(np.cumsum(count) - count, count)
            left.append(rows[i])
            right.append(rows[by_position[np.repeat(start, count) + offset]])
            dist.append(np.full(total, d))
            order_of.append(np.full(total, 2 * (d - 1) + rank))
    if not left:
        return none, none, none
    left, right, dist, order_of = (np.concatenate(a) for a in (left, right, dist, order_of))
    # In the order the pairs were always listed: by memory, distance, before/after, neighbour.
    order = np.lexsort((right, order_of, left))
    return left[order], right[order], dist[order]


def _neighbour_best(base: np.ndarray, sig: Signals, window: int = 1, decay: float = 0.5) -> np.ndarray:
    """For each memory, the best of its neighbours' scores, those `d` events away discounted by
    decay**(d-1) (0 when it has none)."""
    if sig.pairs is None:
        sig.pairs = neighbour_pairs(sig)
    left, right, dist = sig.pairs
    out = np.zeros_like(base)
    keep = dist <= window
    if keep.any():
        np.maximum.at(out, left[keep], base[right[keep]] * decay ** (dist[keep] - 1))
    return out


def answer_pairs(sig: Signals) -> tuple[np.ndarray, np.ndarray]:
    """(i, j): episode j asks something and is the event right before episode i in its session,
    taken from the neighbour pairs (distance 1, j earlier). An untrusted episode (a tool's or web
    page's text) lends nothing."""
    none = np.array([], dtype=int)
    if sig.asks is None or sig.is_episode is None or not sig.asks.any():
        return none, none
    if sig.pairs is None:
        sig.pairs = neighbour_pairs(sig)
    left, right, dist = sig.pairs
    if not len(left):
        return none, none
    seq = np.array([-1 if v is None else v for v in sig.seq])  # pairs only join memories that have one
    lends = sig.asks & sig.is_episode & ~sig.untrusted
    keep = (dist == 1) & (seq[right] < seq[left]) & sig.is_episode[left] & lends[right]
    return left[keep], right[keep]


def _answer_credit(base: np.ndarray, sig: Signals) -> np.ndarray:
    """Per episode, the score of the question asked just before it (0 when none was)."""
    if sig.answers is None:
        sig.answers = answer_pairs(sig)
    answers, questions = sig.answers
    out = np.zeros_like(base)
    out[answers] = base[questions]
    return out


# A message that asks about the world and says nothing of the person who asks ("do tortoises
# hibernate?", "what's the best pasta shape for pesto") answers no question about that person,
# however well it shares the question's topic; people ask an assistant such things all day,
# beside the one message that says which pasta they always buy. Such a message of the person's
# (role "user") has its relevance multiplied by 1 - RELEVANCE["impersonal"]. Told by the
# language's closed classes, not by phrasings: it asks (a question mark ending a clause, or a
# question opening it after the "Speaker: " an episode starts with when it has a speaker) and has
# no first-person word, in English or in the common languages whose words are plain ASCII
# (typed without the apostrophe too). A statement with its subject left out ("picked up the
# cello instead") asks nothing and keeps its relevance; so do "when mum visits she brings cake"
# and "what a day": a question word opens a question only before an auxiliary (what's, how do,
# why are, which is, how many), for "what", "which" and "whose" also a word later ("what
# temperature should"), and for "whats", "who" and "how" before anything. "is", "are" and "does" open a question
# before anything ("are robot vacuums worth it"); "was", "were" and "did" do not, because people
# drop the subject ("did my loop of the park today"); "do", "can" and the like only before a
# pronoun or a determiner. A request about the world made with an asking verb ("explain how
# tides work", "describe a sonnet") is one too; "tell", "write", "give", "list" and the like are
# left out: a person says "write code for a bank" of themselves, with the subject dropped. Known
# to be misread: a statement of the person's with the subject dropped that opens with "is" or
# "are" ("are moving to Bristol in June"), which loses the impersonal share of its relevance.
# (An unbounded prefix: PostgreSQL's regular expressions expand a bounded one, "{1,60}", into
# states, which cost 40 µs a row against 3.)
QUESTION_OPENS = (r"^([^:\n]+:\s*)?((what|when|where|which|why)('s|\s+(is|are|was|were|do|does|did|can|"
                  r"could|would|should|will|has|have|had|to|kind|sort|type|time|about)\y)|(whats|who|how)\s+\w|"
                  r"(what|which|whose)\s+\w+\s+(is|are|was|were|do|does|did|can|could|would|should|will)\s|"
                  r"(is|are|does)\s+\w|"
                  r"(do|can|could|would|should|will)\s+(it|there|this|that|these|those|the|a|an|any|"
                  r"you|he|she|they|someone|anyone|people|everyone)\s|"
                  r"(explain|describe|define|summari[sz]e)\s)")
SELF_WORDS = (r"\y(i|me|my|mine|myself|we|us|our|ours|ourselves|im|ive|lets|"
              r"ich|mich|mir|mein|meine|meinen|meinem|meiner|meines|wir|uns|unser|unsere|"  # German
              r"je|j|moi|mon|ma|mes|nous|notre|nos|"  # French
              r"yo|mi|mis|nosotros|nosotras|nuestro|nuestra|nuestros|nuestras|"  # Spanish
              r"io|mio|mia|miei|mie|noi|nostro|nostra|"  # Italian
              r"eu|meu|minha|meus|minhas|nosso|nossa|"  # Portuguese
              r"ik|mijn|wij|ons|onze)\y")  # Dutch


def relevance_scores(sig: Signals, info: QueryInfo, weights: dict | None = None) -> tuple[np.ndarray, dict]:
    """Fused relevance in [0, 1] per memory, and the components (for score_details)."""
    w = RELEVANCE if weights is None else weights
    dense = _scaled(sig.sim) if w.get("dense_scale", "minmax") == "minmax" else np.clip(sig.sim, 0, 1)
    # BM25 is scaled by the best match in scope, but never by less than what a match of the
    # whole query would score: when nothing in scope shares more than a lone common word
    # ("office", "weekend") with a question, that word must not count as a perfect text match.
    top = max(float(sig.bm25.max()) if len(sig.bm25) else 0.0, w.get("text_floor", 0.0) * sig.bm25_ideal)
    text = sig.bm25 / top if top > 0 else np.zeros_like(sig.bm25)
    if w.get("passage") and sig.ctx_sim is not None:
        passage = _scaled(sig.ctx_sim) if w.get("dense_scale", "minmax") == "minmax" else np.clip(sig.ctx_sim, 0, 1)
        dense = (dense + w["passage"] * passage) / (1 + w["passage"])
    base = w["dense"] * dense + w["text"] * text
    neighbour = (_neighbour_best(base, sig, w.get("window", 1), w.get("decay", 0.5)) if w.get("neighbour")
                 else np.zeros_like(base))
    # By word, as search_terms drops them: "Mary" names the speaker "Mary Ann".
    speaker = (np.array([not info.names.isdisjoint(s.split()) for s in sig.speaker], dtype=float) if info.names
               else np.zeros_like(base))
    if info.names and sig.names_them is not None:
        speaker = np.maximum(speaker, sig.names_them)
    timely = sig.has_time.astype(float) if info.asks_when else np.zeros_like(base)
    # The attribute the query asks about (memoryapp/keyroute.py): its facts get a boost, and
    # only then does the boost take part in the normalisation, so other queries score as before.
    routed = dict(info.keys)
    keyed = (np.array([key_weight(k, routed) for k in sig.key], dtype=float)
             if routed and sig.key is not None and w.get("key") else None)
    answer = _answer_credit(base, sig) if w.get("answer") else np.zeros_like(base)
    # Like the key and period boosts below, the answer credit joins the normalisation only when
    # some memory in scope gets it, so a subject whose events ask nothing scores as before.
    answer_weight = w.get("answer", 0) if answer.any() else 0
    total = (base + w.get("neighbour", 0) * neighbour + w.get("speaker", 0) * speaker
             + w.get("time", 0) * timely + answer_weight * answer)
    if keyed is not None:
        total = total + w["key"] * keyed
    # Like the key boost, the period joins the normalisation only when the query names one that
    # some memory in scope fits, so other queries (and a date nothing fits) score as before.
    dated = period_match(sig, info.periods) if info.periods and w.get("period") else None
    if dated is not None and not dated.any():
        dated = None
    if dated is not None:
        total = total + w["period"] * dated
    if w.get("impersonal") and sig.impersonal is not None:
        total = np.where(sig.impersonal, total * (1 - w["impersonal"]), total)
    norm = w["dense"] + w["text"] + (w.get("neighbour", 0) + answer_weight) * (w["dense"] + w["text"]) \
        + w.get("speaker", 0) + w.get("time", 0) + (w["key"] if keyed is not None else 0) \
        + (w["period"] if dated is not None else 0)
    return total / norm, {"dense": dense, "text": text, "neighbour": neighbour, "answer": answer}


# Read-time supersession (answered_later), chosen on the blind dev split (bench/changing_facts_blind.py)
# and checked against LoCoMo's tune split: without the cue, or hiding the older statement, it
# took later statements of events for new versions of them (LoCoMo R@1 -7, R@50 -10).
SUPERSESSION = {
    "pool": 30,      # how far down the ranking a later statement of the best hit is looked for
    "similar": 0.3,  # cosine (centred on the pool): close enough to say the same thing again
    "frame_pool": 10,  # how far down a restatement in the same words (frames.same_frame) is looked for
    "frame_gap": 0.15,  # ... and how much less well it may match the query
    # Right behind the best hit, a later message of the same person that says much the same
    # thing needs no word of change: people restate a fact without one ("I own a Yaris" after
    # "my car's a Skoda"). Messages only (episodes with a role), never facts. Replayed on the
    # blind dev dump (bench/read_policy_sim.py): k=1 current 56.9 -> 59.1 %, the same with 2 or
    # 3 places, and no gap on the score needed.
    "near": 2,
    # A later statement that says something changed, this close behind the best hit, needs only
    # this much similarity to it: "we play as The Smarty Pints instead" after "book a table for
    # quiz night, under the team name Les Quizerables" shares little but the question. Chosen
    # on blind_v5's dev split (k=1 current 65.9 -> 70.3 %; blind_v4 dev 53.1 -> 54.1, blind_v1
    # dev 60.9 -> 60.3). Held out: blind_v5 62.8 -> 65.5, blind_v4 50.5 -> 52.0, blind_v3 68.2 ->
    # 68.0; changed facts gain 4-10 points, unchanged ones lose 1-3 (a later change of a
    # neighbouring attribute taken for the answer); LoCoMo R@1 -0.3 (tune) and -0.5 (test), R@5 and
    # beyond unchanged (docs/benchmarks.md). cued_reach = 0 turns it off.
    "cued_reach": 3,
    "cued_similar": 0.1,
    # Right behind the best hit (the next place), a later message of the same person that states
    # something (no question mark) and matches the query at least next_ratio as well needs only
    # next_similar: "SLATE is the opener for this year's wordle streak" after "first wordle
    # guess: CARTE" says the same thing in other words. Chosen by replaying the dev dumps of
    # blind_v6/v5/v4/v1 offline (k=1 current +2.6 / +2.2 / +2.2 / -0.3 points; a ratio of 0.5
    # gained more on three and cost blind_v1 0.9, the next two places no more than the next one);
    # next_reach = 0 turns it off.
    "next_reach": 1,
    "next_similar": 0.2,
    "next_ratio": 0.6,
}


def _spoken(statement: str) -> str:
    """An episode's words without the "Speaker: " its statement starts with."""
    head, sep, rest = statement.partition(": ")
    return rest if sep and len(head) <= 60 and "\n" not in head else statement
# Words with which people say that something about them changed. A closed class of the
# language, not a list of phrasings; "now" and "new" are left out: events use them all the time.
# Written as a PostgreSQL regular expression (\y a word's edge).
CHANGE_CUES = (r"\y(no longer|any ?more|switched|switching|changed|moved|relocated|these days|nowadays|"
               r"instead|update|updated|used to|took up|taken up|replaced|gave up|got rid of)\y")
# As Python reads it (PostgreSQL's \y is a word's edge, Python's \b): matched here, for the few
# statements answered_later weighs, rather than in SQL for the whole pool (~3.5 ms a search at
# 10,000 memories, of which a handful are read). The two agree on letters and digits of any
# script; they differ on rarities (Python takes a superscript "³" for part of a word and folds
# "ſ" or the Kelvin sign as "s" and "k"), which at worst leave a cue unread or read one more.
_CHANGE_CUES = re.compile(CHANGE_CUES.replace(r"\y", r"\b"), re.IGNORECASE)


def tells_change(sig: Signals, i: int) -> bool:
    """Whether memory `i`'s text says that something changed (CHANGE_CUES)."""
    if sig.tells_change is not None:
        return bool(sig.tells_change[i])
    return bool(sig.statement is not None and _CHANGE_CUES.search(sig.statement[i] or ""))


def _pool_rows(*, tenant: Tenant, ids: list) -> dict:
    """id -> (embedding or None, statement) for the pool's memories: one round trip. The vector
    comes in pgvector's binary form (vector_send: two 16-bit words, then big-endian float4s),
    read with no parsing; as text, 30 of them took ~3 ms to parse."""
    rows = tenant_activate_and_query(
        tenant=tenant, params={"tenant": tenant.pk, "ids": ids},
        sql="SELECT id, vector_send(embedding), statement FROM memoryapp_memory"
            " WHERE tenant_id = %(tenant)s AND id = ANY(%(ids)s)",
    )
    return {i: (None if raw is None else np.frombuffer(raw, dtype=">f4", offset=4), statement)
            for i, raw, statement in rows}


def _says_the_same(place: int, likeness: float, tells_change: bool, w: dict, *, next_statement: bool = False) -> bool:
    """Whether a later statement `place` places behind the best hit, `likeness` (centred cosine)
    alike, answers the same question: alike enough, or, close behind it and saying that something
    changed, only a little alike; or, right behind it, a statement that matches the query nearly
    as well (`next_statement`), a little less alike."""
    return likeness >= w["similar"] or (
        tells_change and place <= w.get("cued_reach", 0) and likeness >= w.get("cued_similar", 1.0)) or (
        next_statement and likeness >= w.get("next_similar", 1.0))


def answered_later(*, tenant: Tenant, sig: Signals, order: np.ndarray, weights: dict | None = None,
                   scores: np.ndarray | None = None) -> tuple[np.ndarray, dict]:
    """Recency among the statements that answer the same question. The best hit is the
    query's answer; a statement further down the ranking, by the same person, that became
    valid later, says that something changed ("no longer", "switched", "these days") and
    says much the same thing as the answer, is the current answer: it takes the first place
    and the older one follows it. Right behind the best hit (SUPERSESSION["near"] places), a
    later message of the same person needs no word of change. A question that says nothing of
    its asker never takes the answer's place. Decided at read time from the statements themselves, so an
    extractor that never saw a phrasing cannot hide evidence; nothing leaves the ranking.
    Returns the new order and {older index: newer index}."""
    w = SUPERSESSION if weights is None else weights
    pool = [int(i) for i in order[:w["pool"]]]
    if len(pool) < 2:
        return order, {}
    top = pool[0]
    voice = [((sig.role[i] if sig.role else None) or "", sig.speaker[i]) for i in pool]
    when = sig.valid_from_days
    # Never an untrusted statement (a forwarded email, a web page) in place of a trusted answer.
    later = [b for b in range(1, len(pool)) if when[pool[b]] > when[top] and voice[b] == voice[0]
             and (not sig.untrusted[pool[b]] or sig.untrusted[top])
             # A question that says nothing of its asker ("are robot vacuums worth it?") states
             # no value of theirs, so it answers no question about them in place of one that does.
             and not (sig.impersonal is not None and sig.impersonal[pool[b]])]
    if not later:
        return order, {}
    # Near the top, two messages of one person need no word of change; never a fact, whose
    # voice is whoever wrote it ("allergic to peanuts" is not restated by the daughter's allergy).
    near = [b for b in later if b <= w.get("near", 0) and sig.is_episode is not None
            and sig.is_episode[top] and sig.is_episode[pool[b]] and sig.role and sig.role[pool[b]]]
    cued = [b for b in later if tells_change(sig, pool[b]) or b in near]
    # Restated in the same words: a fact and a fact, or a message and a message (an attribute
    # no rule knows is only ever an episode); never a fact and a message, which differ in
    # wording whatever they say. The round trip this costs is paid only when such a pair
    # matches the query about as well as the best hit.
    framed = [b for b in later if b < w.get("frame_pool", 0) and sig.is_episode is not None
              and sig.is_episode[top] == sig.is_episode[pool[b]]
              # filed under other attributes, they answer other questions whatever their words
              and (sig.key is None or sig.key[top] == sig.key[pool[b]])
              # said the same way but for the value, it matches the query about as well
              and (scores is None or scores[top] - scores[pool[b]] <= w.get("frame_gap", 1.0))]
    if not cued and not framed:
        return order, {}
    # One more round trip, only when a later statement by the same voice is near the top or
    # says something changed.
    rows = _pool_rows(tenant=tenant, ids=[sig.ids[i] for i in pool])
    vectors = np.zeros((len(pool), embeddings.DIMENSIONS), dtype=np.float32)
    statements = [""] * len(pool)
    for n, i in enumerate(pool):
        vector, statements[n] = rows.get(sig.ids[i], (None, ""))
        if vector is not None:
            vectors[n] = vector
    # Centred on the pool's mean: what all of them share (the speaker's name every episode
    # starts with, the chat's style) says nothing about whether two say the same thing.
    vectors -= vectors.mean(axis=0)
    vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-9)
    # The next place: a statement (no question mark) that matches the query nearly as well.
    stated_next = {b for b in near if b <= w.get("next_reach", 0) and sig.asks is not None and not sig.asks[pool[b]]
                   and sig.sim[pool[b]] >= w.get("next_ratio", 1.0) * sig.sim[top]}
    restating = [b for b in cued if _says_the_same(b, float(vectors[0] @ vectors[b]), tells_change(sig, pool[b]), w,
                                                   next_statement=b in stated_next)]
    # Said the same way with another value ("I prefer coffee" / "I prefer tea"): the same
    # question answered anew, with or without a word of change (memoryapp/frames.py).
    restating += [b for b in framed if b not in restating and same_frame(_spoken(statements[0]), _spoken(statements[b]))]
    if not restating:
        return order, {}
    newest = pool[max(restating, key=lambda b: when[pool[b]])]
    rest = [int(i) for i in order if int(i) not in (newest, top)]
    return np.array([newest, top, *rest], dtype=int), {top: newest}


def one_per_event(sig: Signals, order: np.ndarray, k: int) -> list[int]:
    """The first `k` of `order`, one memory per source event: a fact drawn from a message and
    that message's episode are the same evidence, and showing both would push out what another
    message said (a newer statement of the same fact, most often: the old value's fact and
    episode filled two places). Memories without an event each count on their own."""
    kept, seen = [], set()
    for i in order:
        seq = sig.seq[i]
        if seq is not None:
            if seq in seen:
                continue
            seen.add(seq)
        kept.append(int(i))
        if len(kept) == k:
            break
    return kept


def search_terms(*, tenant: Tenant, subject_ref: str, query: str,
                 info: QueryInfo | None = None) -> tuple[str, frozenset]:
    """What `query` is matched with, by words and by embedding: itself, less the names of the
    people who speak in the subject's events (query.query_match_text); and the names it left
    out, which then credit what those people said (the speaker boost) and the facts that name
    them. Costs a round trip only when the query names someone."""
    info = info or query_understand(query)
    first_person = query_in_first_person(query)
    if not info.names:
        return first_person, frozenset()
    speakers = subject_speaker_words(tenant=tenant, subject_ref=subject_ref) & info.names
    text = query_match_text(first_person, speakers)
    return text, (speakers if text != first_person else frozenset())


def search_text(*, tenant: Tenant, subject_ref: str, query: str, info: QueryInfo | None = None) -> str:
    """search_terms' text: what a caller that passes memory_search its own `query_embedding`
    embeds."""
    return search_terms(tenant=tenant, subject_ref=subject_ref, query=query, info=info)[0]


def memory_search(
    *, tenant: Tenant, subject_ref: str, query: str, k: int = 5, as_of: datetime | None = None,
    memory_types: list[str] | None = None, namespace: str | None = None, include_superseded: bool = False,
    min_score: float | None = None, query_embedding: np.ndarray | None = None,
    policy: ReadPolicy = AGENT_DEFAULT, working_namespace: str | None = None, known_at: datetime | None = None,
) -> list[SearchHit]:
    """The subject's best memories for `query`, best first. Needs an open transaction (the
    request's or the caller's): it binds it to `tenant` for row-level security.

    Two round trips whatever `k`: the tenant binding with the ranking query, then the hits' rows
    with their relations (selectors/hits.py; it counts no access: the read audit does, folded in
    by the worker, services/accesses.py); a third, small one when the
    query names someone (search_terms). `query_embedding`, if given, is the embedding of
    search_text(query). `policy`: sensitivity and purpose (readpolicy.py); `working_namespace`:
    the namespace the caller works in, where the narrowest applicable version of a keyed fact
    wins (readpolicy.narrowest_sql). `known_at`: answer as the store knew it then (versions
    recorded by then, in the state they had then); `as_of` defaults to it."""
    now = timezone.now()
    if known_at is not None and known_at >= now:
        known_at = None  # the store knows nothing after now that it does not know now
    as_of = as_of or known_at or now
    statuses = [Memory.Status.ACTIVE]
    if include_superseded or as_of < (known_at or now):
        # What was valid then, as known now: a version superseded since then was current then.
        statuses.append(Memory.Status.SUPERSEDED)
    extra, params = [], {}
    if memory_types:
        extra.append("AND m.memory_type = ANY(%(types)s)")
        params["types"] = list(memory_types)
    if namespace:
        extra.append("AND (m.namespace = %(ns)s OR m.namespace LIKE %(ns_prefix)s)")
        params["ns"] = namespace.rstrip("/")
        params["ns_prefix"] = like_escape(namespace.rstrip("/")) + "/%"
    # Sensitivity, purpose and namespace precedence are scope, like the rest: before ranking.
    policy_clause, policy_params = policy_sql(policy)
    extra.append(policy_clause)
    params.update(policy_params)
    if working_namespace is not None:
        extra.append(narrowest_sql(policy, known=known_at is not None))
        params["ns_chain"] = namespace_chain(working_namespace)
        params["ns_below"] = below_pattern(working_namespace)
    info = query_understand(query)
    text, named = search_terms(tenant=tenant, subject_ref=subject_ref, query=query, info=info)
    qvec = query_embedding if query_embedding is not None else embeddings.embed_text(text, partition=tenant.pk)
    info = replace(info, keys=keys_for_query(qvec))
    sig = search_signals(
        tenant=tenant, subject_ref=subject_ref, query=text, query_embedding=qvec, as_of=as_of, now=now,
        statuses=statuses, include_superseded=include_superseded, extra_sql=" ".join(extra), extra_params=params,
        named=named, known_at=known_at, keys=info.keys, periods=info.periods,
    )
    if not sig.ids:
        return []
    relevance, parts = relevance_scores(sig, info)
    half_life = settings.MEMORY_RECENCY_HALF_LIFE_DAYS
    recency = np.exp(-math.log(2) * sig.age_days / half_life)
    scores = (relevance + WEIGHTS["recency"] * recency + WEIGHTS["importance"] * sig.importance
              + WEIGHTS["confidence"] * sig.confidence)
    scores = np.where(sig.untrusted, scores * UNTRUSTED_FACTOR, scores)
    order = np.argsort(-scores, kind="stable")
    later = {}
    if not include_superseded:
        order, later = answered_later(tenant=tenant, sig=sig, order=order, scores=scores)
    if min_score is not None:
        # Scores compare within one query, not across queries: when a query routes to a key
        # (keyroute.py), names a date, or some memory in scope replies to a question asked
        # just before it, that boost joins the normalisation, so its other memories score lower.
        order = order[scores[order] >= min_score]
    order = one_per_event(sig, order, k) if not include_superseded else order[:k].tolist()
    if not order:
        return []
    memories = memories_for_hits(tenant=tenant, ids=[sig.ids[i] for i in order])
    hits = []
    for i in order:
        memory = memories.get(sig.ids[i])
        if memory is None:
            continue
        details = {
            "vector_similarity": round(float(sig.sim[i]), 6), "text_score": round(float(sig.bm25[i]), 6),
            # How much of the query the memory's words cover (BM25 against a whole-query match):
            # like vector_similarity, it means the same whatever the query and the subject.
            "text_coverage": round(float(sig.bm25[i] / sig.bm25_ideal), 6) if sig.bm25_ideal > 0 else 0.0,
            "dense": round(float(parts["dense"][i]), 6), "text": round(float(parts["text"][i]), 6),
            "neighbour": round(float(parts["neighbour"][i]), 6), "answer": round(float(parts["answer"][i]), 6),
            "relevance": round(float(relevance[i]), 6),
            # asks about the world and says nothing of its speaker (RELEVANCE["impersonal"])
            "impersonal": bool(sig.impersonal[i]),
            "recency": round(float(recency[i]), 6), "importance": memory.importance,
            "confidence": memory.confidence,
        }
        if i in later:
            details["answered_later_by"] = f"mem_{sig.ids[later[i]].hex}"
        hits.append(SearchHit(memory=memory, score=round(float(scores[i]), 6), details=details))
    return hits
