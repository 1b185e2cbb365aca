"""The mem0 Platform routes, as an unchanged `mem0ai` MemoryClient(host=…) calls them: a thin
translation onto the same services and selectors as the v1 API (see api/mem0/scope.py for how
mem0's ids become a subject and labels, and docs/integrations.md for the whole mapping)."""
import ast
import uuid
from urllib.parse import urlencode

from django.db.models import Q
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from api.authentication import claim_source
from api.mem0.base import Mem0View
from api.mem0.representations import labels_and_metadata, mem0_history, mem0_memory, mem0_score
from api.mem0.scope import (
    ENTITY_IDS,
    LABELS_KEY,
    Scope,
    UnsupportedFilter,
    contains,
    scope_merge,
    scope_subject,
)
from api.mem0.serializers import AddIn, ListIn, PageIn, SearchIn, UpdateIn, mem0_extras
from api.representations import iso, job_json
from api.serializers import says_something
from memoryapp.errors import ApplicationError, NotFound
from memoryapp.policy import DEFAULT_SOURCE_FOR_ROLE
from memoryapp.retrieval import memory_search
from memoryapp.selectors.lookup import event_metadata, memory_find_current, subjects_overview
from memoryapp.selectors.memories import job_get, job_is_theirs, memory_get, memory_history, memory_list, subject_find
from memoryapp.services.events import EventInput, event_append
from memoryapp.services.memories import (
    MemoryDraft,
    memories_forget,
    memory_correct,
    memory_forget,
    memory_write,
    policy_check,
    subject_erase_request,
)
from memoryapp.services.reads import read_audit_record

QUEUED = "Memory processing has been queued for background execution."
JOB_STATUS = {"queued": "PENDING", "running": "RUNNING", "succeeded": "SUCCEEDED", "failed": "FAILED"}
# Search hits are filtered by labels and metadata after ranking: from this many candidates.
FILTERED_POOL = 100
MAX_QUERY_FILTERS = 10_000


def _events_for(tenant, memories) -> dict:
    """The source events' metadata, loaded once, for the memories that keep their labels there."""
    return event_metadata(tenant=tenant, event_ids=[
        m.source_event_id for m in memories
        if m.source_event_id and not (isinstance(m.metadata, dict) and LABELS_KEY in m.metadata)
    ])


def _matches(memory, events: dict, wanted: dict) -> bool:
    return not wanted or contains(memory.metadata, wanted) or contains(events.get(memory.source_event_id), wanted)


def _wanted_q(wanted: dict) -> Q:
    return Q(metadata__contains=wanted) | Q(source_event__metadata__contains=wanted)


def _with_notes(body: dict, notes: list[str]) -> dict:
    if notes:
        body["notes"] = notes
    return body


def _own_metadata(metadata: dict) -> dict:
    if LABELS_KEY in metadata:
        raise ApplicationError("invalid_request", f"metadata.{LABELS_KEY} is reserved for the mem0 ids kept beside "
                               "the subject (agent_id, run_id, app_id).", {"metadata": LABELS_KEY})
    return metadata


def _scope_from(data: dict) -> Scope:
    """mem0 ids may come at the top level (add, delete_all) or inside `filters`."""
    scope = Scope()
    scope_merge(scope, {k: data.pop(k) for k in ENTITY_IDS if k in data})
    scope_merge(scope, data.pop("filters", None))
    return scope


class PingView(Mem0View):
    """`GET /v1/ping/`: the client checks its key here and wants an organisation and a project."""

    def get(self, request):
        tenant = request.tenant
        return Response({
            "status": "ok", "message": "API key is valid.", "org_id": tenant.slug, "project_id": "default",
            "user_email": None, "subject": self.bound(request) or None,
        })


class AddView(Mem0View):
    """`POST /v3/memories/add/`: infer=true appends the messages as events for extraction (202,
    PENDING with the job's id); infer=false writes each message as it is, one memory per
    message, through the write policy (a refusal: 422 naming the reason, nothing written)."""

    def post(self, request):
        data, notes = mem0_extras(request.data)
        scope = _scope_from(data)
        data = self.validated(AddIn, data)
        subject = scope_subject(request, scope)
        metadata = {**_own_metadata(data["metadata"]), LABELS_KEY: scope.labels}
        if data["infer"]:
            return self._infer(request, subject, scope, data, metadata, notes)
        return self._write(request, subject, data, metadata, notes)

    def _infer(self, request, subject, scope, data, metadata, notes):
        if data.get("expiration_date"):
            notes.append("'expiration_date' applies to explicit writes (infer=false); extraction ignored it.")
        batch = uuid.uuid4().hex
        inputs = [
            EventInput(event_id=f"mem0-{batch}-{i}", role=m["role"], content=m["content"],
                       source_kind=claim_source(request, subject=subject, operation="mem0_add",
                                                source_kind=DEFAULT_SOURCE_FOR_ROLE[m["role"]]),
                       occurred_at=data.get("timestamp"), session_id=scope.run_id, speaker=m.get("name", ""),
                       metadata=metadata)
            for i, m in enumerate(data["messages"])
        ]
        appended, job = event_append(tenant=request.tenant, subject_ref=subject, events=inputs,
                                     actor=self.actor(request))
        pending = {"message": QUEUED, "status": "PENDING", "event_id": job.public_id}
        body = {**pending, "results": [pending], "job": job.public_id,
                "events": [a.event.public_id for a in appended]}
        return Response(_with_notes(body, notes), status=status.HTTP_202_ACCEPTED)

    def _write(self, request, subject, data, metadata, notes):
        drafts = []
        for i, message in enumerate(data["messages"]):
            try:
                says_something(message["content"])
            except ValidationError:
                raise ApplicationError("invalid_request", f"messages[{i}].content: an explicit write (infer=false) "
                                       "needs at least one letter or digit.", {"messages": i}) from None
            drafts.append(MemoryDraft(
                statement=message["content"],
                source_kind=claim_source(request, subject=subject, operation="mem0_add",
                                         source_kind=DEFAULT_SOURCE_FOR_ROLE[message["role"]]),
                valid_from=data.get("timestamp"), expires_at=data.get("expiration_date"), metadata=metadata,
            ))
        actor = self.actor(request)
        # Every message through the policy before any is written: one refusal writes nothing.
        for draft in drafts:
            policy_check(tenant=request.tenant, subject_ref=subject, draft=draft, actor=actor)
        results = []
        for draft in drafts:
            written = memory_write(tenant=request.tenant, subject_ref=subject, draft=draft, actor=actor)
            event = "UPDATE" if written.superseded else ("ADD" if written.created else "NOOP")
            memory = memory_get(tenant=request.tenant, subject_ref=subject, memory_id=written.memory.public_id)
            results.append({"id": memory.public_id, "memory": memory.statement, "event": event,
                            "data": {"memory": memory.statement},
                            "previous_memory": [m.public_id for m in written.superseded] or None,
                            "status": memory.status})
        return Response(_with_notes({"results": results}, notes))


class SearchView(Mem0View):
    """`POST /v3/memories/search/`: v1's search on one subject; labels and metadata filter the
    ranked candidates; scores scaled to [0, 1]."""

    def post(self, request):
        data, notes = mem0_extras(request.data)
        scope = _scope_from(data)
        data = self.validated(SearchIn, data)
        if data.get("metadata") is not None:
            notes.append("'metadata' on search is not a filter here; use filters={'metadata': {...}}. It was ignored.")
        subject = scope_subject(request, scope)
        wanted = scope.wanted()
        top_k = data["top_k"]
        hits = memory_search(tenant=request.tenant, subject_ref=subject, query=data["query"],
                             k=max(top_k, FILTERED_POOL) if wanted else top_k)
        events = _events_for(request.tenant, [h.memory for h in hits])
        threshold = data.get("threshold")
        results, shown = [], []
        for hit in hits:
            score = mem0_score(hit.score)
            if not _matches(hit.memory, events, wanted) or (threshold is not None and score < threshold):
                continue
            results.append({**mem0_memory(hit.memory, events), "score": score})
            shown.append(hit.memory.pk)
            if len(results) == top_k:
                break
        read_audit_record(tenant=request.tenant, actor=self.actor(request), subject_ref=subject, operation="search",
                          memory_ids=shown, query=data["query"])
        return Response(_with_notes({"results": results}, notes))


class MemoriesView(Mem0View):
    """`POST /v3/memories/?page=&page_size=` (get_all) and `GET /v1/memories/` list one subject's
    current memories, newest first, by page; `DELETE /v1/memories/` (delete_all) forgets them."""

    def post(self, request):
        data, notes = mem0_extras(request.data)
        return self._page(request, data, notes)

    def get(self, request):
        data, notes = mem0_extras(self._query(request, exclude=("page", "page_size")))
        return self._page(request, data, notes)

    def _query(self, request, exclude=()) -> dict:
        """Query parameters; `filters` (and `metadata`) arrive as Python literals (the client
        puts a dict into the query string), read with literal_eval, never eval."""
        data = {}
        for key, value in request.query_params.items():
            if key in exclude:
                continue
            if key in ("filters", "metadata"):
                if len(value) > MAX_QUERY_FILTERS:
                    raise UnsupportedFilter("filters is too long.")
                try:
                    value = ast.literal_eval(value)
                except (ValueError, SyntaxError, MemoryError, RecursionError):
                    raise UnsupportedFilter(f"{key} in the query string is not a valid object.") from None
            data[key] = value
        if "metadata" in data:
            data.setdefault("filters", {})
            if not isinstance(data["filters"], dict):
                raise UnsupportedFilter("filters must be an object.")
            data["filters"] = {"AND": [data["filters"], {"metadata": data.pop("metadata")}]}
        return data

    def _page(self, request, data, notes):
        scope = _scope_from(data)
        data = self.validated(ListIn, data)
        paging = self.validated(PageIn, request.query_params)
        subject = scope_subject(request, scope)
        memories = memory_list(tenant=request.tenant, subject_ref=subject, status="active")
        wanted = scope.wanted()
        if wanted:
            memories = memories.filter(_wanted_q(wanted))
        if data.get("start_date"):
            memories = memories.filter(recorded_at__gte=data["start_date"])
        if data.get("end_date"):
            memories = memories.filter(recorded_at__lte=data["end_date"])
        page, size = paging["page"], paging["page_size"]
        count = memories.count()
        rows = list(memories[(page - 1) * size: page * size])
        events = _events_for(request.tenant, rows)
        read_audit_record(tenant=request.tenant, actor=self.actor(request), subject_ref=subject, operation="list",
                          memory_ids=[m.pk for m in rows])

        def link(number):
            query = request.query_params.copy()
            query["page"], query["page_size"] = str(number), str(size)
            return request.build_absolute_uri(request.path) + "?" + urlencode(query)

        body = {
            "count": count,
            "next": link(page + 1) if page * size < count else None,
            "previous": link(page - 1) if page > 1 else None,
            "results": [mem0_memory(m, events) for m in rows],
        }
        return Response(_with_notes(body, notes))

    def delete(self, request):
        data, notes = mem0_extras(self._query(request))
        scope = _scope_from(data)
        if data:
            raise UnsupportedFilter(f"Unknown parameters: {', '.join(sorted(data))}.")
        # Never "everything of the key's subject" by omission: the client drops ids that are None,
        # so delete_all(user_id=None) would arrive as a bare DELETE.
        if not (scope.user_id or scope.agent_id or scope.run_id or scope.app_id):
            raise UnsupportedFilter("Name what to delete: a user_id, agent_id, run_id or app_id is required.")
        subject_ref = scope_subject(request, scope)
        subject = subject_find(tenant=request.tenant, external_id=subject_ref)
        if subject is None:
            return Response(_with_notes({"message": "No memories to delete.", "job": None}, notes))
        memories = memory_list(tenant=request.tenant, subject_ref=subject_ref)
        wanted = scope.wanted()
        if wanted:
            memories = memories.filter(_wanted_q(wanted))
        job = memories_forget(tenant=request.tenant, subject=subject, memories=list(memories),
                              actor=self.actor(request))
        body = {"message": "Memories deleted successfully!", "job": job.public_id, "event_id": job.public_id,
                "status": JOB_STATUS[job.status]}
        return Response(_with_notes(body, notes))


class MemoryView(Mem0View):
    """`GET|PUT|DELETE /v1/memories/{id}/`: any id of a supersession chain names its current
    version; another subject's (with a bound key) or another tenant's id is a 404."""

    def _current(self, request, memory_id):
        return memory_find_current(tenant=request.tenant, memory_id=memory_id, subject_ref=self.bound(request))

    def get(self, request, memory_id):
        memory = self._current(request, memory_id)
        read_audit_record(tenant=request.tenant, actor=self.actor(request),
                          subject_ref=memory.subject.external_id, operation="get", memory_ids=[memory.pk])
        return Response(mem0_memory(memory, _events_for(request.tenant, [memory])))

    def put(self, request, memory_id):
        data, notes = mem0_extras(request.data)
        data = self.validated(UpdateIn, data)
        memory = self._current(request, memory_id)
        events = _events_for(request.tenant, [memory])
        labels, metadata = labels_and_metadata(memory, events)
        changes = {"metadata": {**_own_metadata(data.get("metadata", metadata)), LABELS_KEY: labels}}
        if "timestamp" in data:
            changes["valid_from"] = data["timestamp"]
        if "expiration_date" in data:
            changes["expires_at"] = data["expiration_date"]
        # mem0 sends no source: the update speaks with the highest the key may claim.
        source_kind = claim_source(request, subject=memory.subject.external_id, source_kind=None,
                                   operation="mem0_update")
        new = memory_correct(tenant=request.tenant, memory=memory, actor=self.actor(request),
                             statement=data.get("text"), source_kind=source_kind, **changes)
        subject_ref = memory.subject.external_id
        new = memory_get(tenant=request.tenant, subject_ref=subject_ref, memory_id=new.public_id)
        body = {**mem0_memory(new, {}), "message": "Memory updated successfully!", "previous_memory": memory.public_id}
        return Response(_with_notes(body, notes))

    def delete(self, request, memory_id):
        _, notes = mem0_extras(dict(request.query_params.items()))
        memory = self._current(request, memory_id)
        job = memory_forget(tenant=request.tenant, memory=memory, actor=self.actor(request))
        body = {"message": "Memory deleted successfully!", "id": memory.public_id, "job": job.public_id,
                "event_id": job.public_id}
        if request.query_params.get("delete_linked"):
            notes = ["Forgetting a memory always takes its earlier versions with it; delete_linked changed nothing."]
        return Response(_with_notes(body, notes))


class MemoryHistoryView(Mem0View):
    """`GET /v1/memories/{id}/history/`: the chain's versions as ADD / UPDATE (/ DELETE)."""

    def get(self, request, memory_id):
        current = memory_find_current(tenant=request.tenant, memory_id=memory_id, subject_ref=self.bound(request))
        subject_ref = current.subject.external_id
        history = memory_history(tenant=request.tenant, subject_ref=subject_ref, memory_id=current.public_id)
        versions = history["versions"]
        read_audit_record(tenant=request.tenant, actor=self.actor(request), subject_ref=subject_ref,
                          operation="history", memory_ids=[m.pk for m in versions])
        return Response(mem0_history(versions, current, _events_for(request.tenant, versions)))


class EntitiesView(Mem0View):
    """`GET /v1/entities/`: the subjects this key can reach (a bound key: its own), as mem0
    users and agents (`agent:<id>` subjects)."""

    def get(self, request):
        subjects = subjects_overview(tenant=request.tenant, subject_ref=self.bound(request))
        results = []
        for s in subjects:
            agent = s.external_id.startswith("agent:")
            results.append({
                "id": s.external_id, "name": s.external_id[len("agent:"):] if agent else s.external_id,
                "type": "agent" if agent else "user", "total_memories": s.total_memories,
                "created_at": iso(s.created_at), "updated_at": iso(s.created_at), "owner": None,
                "organization": request.tenant.slug, "metadata": {},
            })
        return Response({"count": len(results), "next": None, "previous": None, "results": results})


class EntityView(Mem0View):
    """`DELETE /v2/entities/{type}/{name}/` (delete_users): erase the subject, as
    `DELETE /api/v1/subjects/{subject}`; runs and apps are labels, not subjects."""

    def delete(self, request, entity_type, name):
        if entity_type == "user":
            scope = Scope(user_id=name)
        elif entity_type == "agent":
            scope = Scope(agent_id=name)
        elif entity_type in ("run", "app"):
            raise UnsupportedFilter(
                f"A {entity_type} is a label here, not a subject: forget its memories with "
                f"delete_all(user_id=..., {entity_type}_id=...).")
        else:
            raise NotFound("entity")
        subject = scope_subject(request, scope)
        job = subject_erase_request(tenant=request.tenant, subject_ref=subject, actor=self.actor(request))
        return Response({"message": "Entity deleted successfully.", "job": job.public_id, "event_id": job.public_id})


class EventView(Mem0View):
    """`GET /v1/event/{id}/`: the status of what add(infer=true) or a deletion queued (our job)."""

    def get(self, request, event_id):
        job = job_get(tenant=request.tenant, job_id=event_id)
        bound = self.bound(request)
        if bound and not job_is_theirs(tenant=request.tenant, subject_ref=bound, job=job):
            raise NotFound("job")
        return Response({
            "id": job.public_id, "event_type": "ADD" if job.kind == "extraction" else "DELETE",
            "status": JOB_STATUS.get(job.status, job.status.upper()), "created_at": iso(job.created_at),
            "updated_at": iso(job.finished_at or job.created_at), "results": job.result, "job": job_json(job),
        })
