"""Hybrid retrieval: pgvector cosine and PostgreSQL full text, fused by reciprocal rank, then
re-scored with recency, importance and confidence.

Scope (tenant, subject, status, validity at `as_of`, expiry, erasure, type, namespace) is applied
in SQL before any ranking, so a filtered-out memory can never appear whatever its score. The
subject's rows are scanned exactly inside a materialised CTE rather than through the HNSW
index: per-subject sets are small (capped), and an approximate index filtered after the fact
would silently drop relevant memories.
"""
import math
import re
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
from django.conf import settings
from django.db import connection
from django.db.models import F
from django.utils import timezone

from memoryapp import embeddings
from memoryapp.models import Memory, Tenant, UNTRUSTED_SOURCES
from memoryapp.selectors.memories import memory_queryset, subject_find
from memoryapp.tenancy import tenant_activate

RRF_K = 60
CANDIDATES = 100
WEIGHTS = {"vector": 1.0, "text": 0.7, "recency": 0.10, "importance": 0.08, "confidence": 0.07}
UNTRUSTED_FACTOR = 0.8

_WORD = re.compile(r"[a-z0-9]+")


@dataclass
class SearchHit:
    memory: Memory
    score: float
    details: dict = field(default_factory=dict)


def text_query(query: str) -> str:
    """An OR of the query's words for to_tsquery: any shared word is a candidate; ts_rank_cd
    then prefers memories that share more of them."""
    words = _WORD.findall(query.lower())
    return " | ".join(dict.fromkeys(w for w in words if len(w) > 1))[:2000]


_SQL = """
WITH scope AS MATERIALIZED (
    SELECT m.id, m.embedding, m.search_vector
    FROM memoryapp_memory m
    WHERE m.tenant_id = %(tenant)s AND m.subject_id = %(subject)s AND NOT m.erasing
      AND m.status = ANY(%(statuses)s)
      AND m.valid_from <= %(as_of)s
      AND (%(all_versions)s OR m.valid_to IS NULL OR m.valid_to > %(as_of)s)
      AND (m.expires_at IS NULL OR m.expires_at > %(now)s)
      {extra}
),
vec AS (
    SELECT id, 1 - (embedding <=> %(qvec)s::vector) AS sim,
           row_number() OVER (ORDER BY embedding <=> %(qvec)s::vector) AS rnk
    FROM scope WHERE embedding IS NOT NULL
    ORDER BY embedding <=> %(qvec)s::vector LIMIT %(n)s
),
txt AS (
    SELECT id, ts_rank_cd(search_vector, q) AS ts,
           row_number() OVER (ORDER BY ts_rank_cd(search_vector, q) DESC) AS rnk
    FROM scope, to_tsquery('english', %(tsq)s) q
    WHERE %(tsq)s <> '' AND search_vector @@ q
    ORDER BY ts DESC LIMIT %(n)s
)
SELECT COALESCE(vec.id, txt.id), vec.rnk, vec.sim, txt.rnk, txt.ts
FROM vec FULL OUTER JOIN txt ON vec.id = txt.id
"""


def _vector_literal(vector: np.ndarray) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in vector.tolist()) + "]"


def memory_search(
    *, tenant: Tenant, subject_ref: str, query: str, k: int = 5, as_of: datetime | None = None,
    memory_types: list[str] | None = None, namespace: str | None = None, include_superseded: bool = False,
    min_score: float | None = None, query_embedding: np.ndarray | None = None, record_access: bool = True,
) -> list[SearchHit]:
    tenant_activate(tenant=tenant)
    subject = subject_find(tenant=tenant, external_id=subject_ref)
    if subject is None:
        return []
    now = timezone.now()
    as_of = as_of or now
    statuses = [Memory.Status.ACTIVE]
    if include_superseded or as_of < now:
        # What was valid then, as known now: a version superseded since then was current then.
        statuses.append(Memory.Status.SUPERSEDED)
    extra, params = [], {}
    if memory_types:
        extra.append("AND m.memory_type = ANY(%(types)s)")
        params["types"] = list(memory_types)
    if namespace:
        extra.append("AND (m.namespace = %(ns)s OR m.namespace LIKE %(ns_prefix)s)")
        params["ns"] = namespace.rstrip("/")
        params["ns_prefix"] = namespace.rstrip("/").replace("%", r"\%").replace("_", r"\_") + "/%"
    qvec = query_embedding if query_embedding is not None else embeddings.embed_text(query)
    params.update(
        tenant=tenant.pk, subject=subject.pk, statuses=statuses, as_of=as_of, all_versions=include_superseded,
        now=now, qvec=_vector_literal(qvec), tsq=text_query(query), n=max(CANDIDATES, k * 4),
    )
    sql = _SQL.replace("{extra}", " ".join(extra))
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    if not rows:
        return []
    ranked = _fuse(rows)
    memories = {m.pk: m for m in memory_queryset(tenant=tenant).filter(pk__in=[r[0] for r in ranked])}
    half_life = settings.MEMORY_RECENCY_HALF_LIFE_DAYS
    best = (WEIGHTS["vector"] + WEIGHTS["text"]) / (RRF_K + 1)
    hits = []
    for memory_id, details in ranked:
        memory = memories.get(memory_id)
        if memory is None:
            continue
        age_days = max((as_of - memory.valid_from).total_seconds(), 0) / 86400
        recency = math.exp(-math.log(2) * age_days / half_life)
        relevance = details["rrf"] / best
        score = (
            relevance
            + WEIGHTS["recency"] * recency
            + WEIGHTS["importance"] * memory.importance
            + WEIGHTS["confidence"] * memory.confidence
        )
        if memory.source_kind in UNTRUSTED_SOURCES:
            score *= UNTRUSTED_FACTOR
        details.update(relevance=round(relevance, 6), recency=round(recency, 6),
                       importance=memory.importance, confidence=memory.confidence)
        hits.append(SearchHit(memory=memory, score=round(score, 6), details=details))
    hits.sort(key=lambda h: h.score, reverse=True)
    if min_score is not None:
        hits = [h for h in hits if h.score >= min_score]
    hits = hits[:k]
    if record_access and hits:
        Memory.objects.filter(tenant=tenant, pk__in=[h.memory.pk for h in hits]).update(
            access_count=F("access_count") + 1, last_accessed_at=now
        )
    return hits


def _fuse(rows) -> list[tuple]:
    fused = []
    for memory_id, v_rank, v_sim, t_rank, t_score in rows:
        rrf = 0.0
        if v_rank is not None:
            rrf += WEIGHTS["vector"] / (RRF_K + v_rank)
        if t_rank is not None:
            rrf += WEIGHTS["text"] / (RRF_K + t_rank)
        fused.append((memory_id, {
            "vector_rank": v_rank, "vector_similarity": None if v_sim is None else round(float(v_sim), 6),
            "text_rank": t_rank, "text_score": None if t_score is None else round(float(t_score), 6),
            "rrf": round(rrf, 8),
        }))
    fused.sort(key=lambda item: item[1]["rrf"], reverse=True)
    return fused
