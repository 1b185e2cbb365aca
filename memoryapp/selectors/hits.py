"""The rows behind ranked search hits, in one statement.

Search ranks ids; its callers then need each memory with what `memory_json` shows: the subject,
the source event, what superseded it, and its evidence, supersedes and derived-from ids. Loading
those through the ORM (select_related plus three prefetches) costs four round trips and a query
compilation each; on a busy two-core machine every round trip waits for the server to be
scheduled, so this fetches everything in one.

The instances it returns behave like rows of `memory_queryset()` for everything `memory_json`
and the context builder read, without further queries. Columns nobody on the search path reads
(the embedding and search vector, an event's content) are deferred: Django loads them on first
access, correctly, one query each.
"""

from django.db import connection
from django.db.models import Model, QuerySet, sql
from django.db.models.base import ModelState

from memoryapp.models import Event, Memory, Subject, Tenant

_DEFERRED_MEMORY = {"embedding", "search_vector"}
_DEFERRED_EVENT = {"content", "metadata", "flags", "error"}
_MEMORY_FIELDS = [f for f in Memory._meta.concrete_fields if f.attname not in _DEFERRED_MEMORY]
_SUBJECT_FIELDS = [f for f in Subject._meta.concrete_fields if f.attname != "speakers"]  # read by search only
_EVENT_FIELDS = [f for f in Event._meta.concrete_fields if f.attname not in _DEFERRED_EVENT]


def _columns(alias: str, fields) -> str:
    return ", ".join(f'{alias}."{f.column}"' for f in fields)


# Evidence in the order the events happened, supersedes and derived-from in the order those
# memories were recorded: the same fixed orders as memory_queryset()'s prefetches.
_SELECT = f"""
SELECT {_columns("m", _MEMORY_FIELDS)},
       {_columns("s", _SUBJECT_FIELDS)},
       {_columns("e", _EVENT_FIELDS)},
       sb.id, ev.ids, ev.event_ids, sup.ids, der.ids
FROM memoryapp_memory m
JOIN memoryapp_subject s ON s.id = m.subject_id AND s.tenant_id = m.tenant_id AND s.status = 'active'
LEFT JOIN memoryapp_event e ON e.id = m.source_event_id AND e.tenant_id = m.tenant_id
LEFT JOIN memoryapp_memory sb ON sb.id = m.superseded_by_id AND sb.tenant_id = m.tenant_id
LEFT JOIN LATERAL (
    SELECT array_agg(x.id ORDER BY x.seq, x.id) AS ids, array_agg(x.event_id ORDER BY x.seq, x.id) AS event_ids
    FROM memoryapp_memoryevidence l JOIN memoryapp_event x ON x.id = l.event_id AND x.tenant_id = l.tenant_id
    WHERE l.memory_id = m.id
) ev ON true
LEFT JOIN LATERAL (
    SELECT array_agg(x.id ORDER BY x.recorded_at, x.id) AS ids FROM memoryapp_memory x WHERE x.superseded_by_id = m.id
) sup ON true
LEFT JOIN LATERAL (
    SELECT array_agg(x.id ORDER BY x.recorded_at, x.id) AS ids
    FROM memoryapp_memorylineage l JOIN memoryapp_memory x ON x.id = l.source_id AND x.tenant_id = l.tenant_id
    WHERE l.derived_id = m.id
) der ON true
WHERE m.tenant_id = %(tenant)s AND m.id = ANY(%(ids)s::uuid[]) AND NOT m.erasing
"""

# What each relation of a memory holds.
_RELATED = {"evidence": Event, "supersedes": Memory, "derived_from": Memory}
# Stands for the Query a LoadedRelation makes only when asked (QuerySet.__init__ would otherwise
# make an unfiltered one).
_NOT_MADE = object()


class LoadedRelation(QuerySet):
    """One memory's relation (evidence, supersedes, derived_from) with the rows the search
    statement loaded, standing where Django's prefetch leaves a queryset. Reading it costs no
    query. Unlike the related manager's own queryset, making it costs nearly nothing: that one
    (a manager, a Query and three clones, ~15 µs) times three relations times up to 150 memories
    was a fifth of a context request's Python. The relation's filtered queryset is made only when
    something queries again through this one (filter, update, count after a change, ...): every
    such path reads `query` or goes through `_clone`, and both use it, still filtered on this
    memory, so nothing reached through it can belong to another memory or subject."""

    def __init__(self, owner: Model, name: str, rows: list):
        super().__init__(model=_RELATED[name], query=_NOT_MADE)
        self._owner, self._name = owner, name
        self._result_cache = rows
        self._prefetch_done = True

    def relation(self) -> QuerySet:
        """The related manager's queryset, as Django builds it when nothing is prefetched. (Django
        internals: tests/memoryapp/test_hit_relations.py says if an upgrade changes them.)"""
        manager = getattr(type(self._owner), self._name).related_manager_cls(self._owner)
        return manager._apply_rel_filters(super(type(manager), manager).get_queryset())

    @property
    def query(self):
        if not isinstance(self._query, sql.Query):  # (also a placeholder that went through pickle)
            self._query = self.relation().query
        return super().query

    @query.setter
    def query(self, value):
        QuerySet.query.fset(self, value)

    def _clone(self):
        return self.relation()._clone()

    def __deepcopy__(self, memo):
        # QuerySet's own makes an instance with no arguments; a copy drops the rows anyway.
        return self.relation()


def _converters(fields) -> list:
    """(index, field, converters) for the fields whose database value needs converting (JSON)."""
    out = []
    for i, f in enumerate(fields):
        converters = f.get_db_converters(connection)
        if converters:
            out.append((i, f, converters))
    return out


_MEMORY_CONVERTERS = _converters(_MEMORY_FIELDS)
_EVENT_CONVERTERS = _converters(_EVENT_FIELDS)
_MEMORY_NAMES = [f.attname for f in _MEMORY_FIELDS]
_EVENT_NAMES = [f.attname for f in _EVENT_FIELDS]
_SUBJECT_NAMES = [f.attname for f in _SUBJECT_FIELDS]


def _instance(model: type[Model], db: str, names: list[str], values) -> Model:
    """What `model.from_db(db, names, values)` returns (fields left out are deferred and load on
    first access), without Model.__init__'s per-field work: a k=50 answer loads ~150 instances,
    and __init__ was over a third of the time spent building them. No model here has post_init
    receivers, the one thing this skips."""
    instance = model.__new__(model)
    instance.__dict__.update(zip(names, values))
    instance._state = ModelState()
    instance._state.adding = False
    instance._state.db = db
    return instance


def _convert(values: list, converters: list) -> list:
    for i, f, funcs in converters:
        for func in funcs:
            values[i] = func(values[i], f, connection)
    return values


def _build(row: tuple, subjects: dict, db: str) -> Memory:
    a = len(_MEMORY_FIELDS)
    b = a + len(_SUBJECT_FIELDS)
    c = b + len(_EVENT_FIELDS)
    memory = _instance(Memory, db, _MEMORY_NAMES, _convert(list(row[:a]), _MEMORY_CONVERTERS))
    subject = subjects.get(row[a])
    if subject is None:
        subject = subjects[row[a]] = _instance(Subject, db, _SUBJECT_NAMES, row[a:b])
    Memory.subject.field.set_cached_value(memory, subject)
    source = None
    if row[b] is not None:
        source = _instance(Event, db, _EVENT_NAMES, _convert(list(row[b:c]), _EVENT_CONVERTERS))
    Memory.source_event.field.set_cached_value(memory, source)
    superseded_by_id, evidence_ids, evidence_event_ids, supersedes_ids, derived_ids = row[c:]
    newer = _instance(Memory, db, ["id"], [superseded_by_id]) if superseded_by_id is not None else None
    Memory.superseded_by.field.set_cached_value(memory, newer)
    pk = memory.pk
    memory._prefetched_objects_cache = {
        "evidence": LoadedRelation(memory, "evidence", [
            _instance(Event, db, ["id", "event_id"], pair) for pair in zip(evidence_ids or (), evidence_event_ids or ())
        ]),
        "supersedes": LoadedRelation(memory, "supersedes", [
            _instance(Memory, db, ["id", "superseded_by_id"], [i, pk]) for i in supersedes_ids or ()
        ]),
        "derived_from": LoadedRelation(memory, "derived_from", [
            _instance(Memory, db, ["id"], [i]) for i in derived_ids or ()
        ]),
    }
    return memory


def memories_for_hits(*, tenant: Tenant, ids: list) -> dict:
    """{pk: Memory} for those of `ids` still readable (not being erased, subject not being erased),
    with the relations `memory_json` reads already loaded. It writes nothing: the read's access
    counts come from its read audit row (services/accesses.py). The caller has bound the
    transaction to `tenant` (row-level security)."""
    if not ids:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(_SELECT, {"tenant": tenant.pk, "ids": list(ids)})
        rows = cursor.fetchall()
    subjects: dict = {}
    return {memory.pk: memory for memory in (_build(row, subjects, connection.alias) for row in rows)}
