"""A tenant administrator's pages: audit log, jobs, quarantine, approvals, API keys. Every view
is @console_view(admin=True): the tenant comes from the admin's own account, never the URL."""
from django.contrib import messages
from django.core.paginator import Paginator
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from console.access import console_view
from console.forms import ApiKeyForm, AuditFilterForm, JobFilterForm, MemoryFilterForm
from console.views import PAGE_SIZE, _detail_context, console_read, page_or_fragment
from memoryapp.errors import ApplicationError, NotFound
from memoryapp.models import AuditEntry, SourceKind
from memoryapp.selectors.console import (
    api_keys_list, audit_actions, audit_changes, audit_entries, audit_entry_get, jobs_list, live_memory_ids,
    memory_subject_ref, pending_approvals, pending_memory_get, quarantined_event_get, quarantined_events,
    subjects_list,
)
from memoryapp.selectors.console import person_memories as person_memory_list
from memoryapp.selectors.memories import parse_public_id, subject_find
from memoryapp.selectors.reads import api_key_get, key_names, key_reads, read_rows
from memoryapp.services.audit import audit_verify
from memoryapp.services.jobs import job_retry
from memoryapp.services.memories import memory_review
from memoryapp.services.quarantine import event_discard, event_release
from memoryapp.services.tenants import api_key_create, api_key_revoke

AUDIT_PAGE_SIZE = 50
JOB_PAGE_SIZE = 50


@console_view(admin=True)
@require_GET
def audit_log(request, ctx):
    form = AuditFilterForm(request.GET or None)
    if form.is_bound and not form.is_valid():
        # A filter that was not understood (a range the wrong way round, a bad time) lists
        # nothing, rather than everything under an error that says it filtered.
        entries = AuditEntry.objects.none()
    else:
        filters = form.cleaned_data if form.is_bound else {}
        entries = audit_entries(
            tenant=ctx.tenant, actor=filters.get("actor") or "", action=filters.get("action") or "",
            subject_ref=filters.get("subject") or "", since=filters.get("since"), until=filters.get("until"),
        )
    page = Paginator(entries, AUDIT_PAGE_SIZE).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    context = {
        "ctx": ctx, "form": form, "page": page, "query": query.urlencode(),
        "actions": audit_actions(tenant=ctx.tenant),
        # Erased memories are gone: their entries stay, but link to nothing.
        "live_ids": live_memory_ids(tenant=ctx.tenant, ids=[e.memory_id for e in page]),
    }
    if not request.htmx:
        # No sealing from a page: it would hold the chain lock for the whole request.
        context["verification"] = audit_verify(tenant=ctx.tenant, seal=False)
    return page_or_fragment(request, "console/admin_audit.html", "entries", context)


@console_view(admin=True)
@require_GET
def audit_entry(request, ctx, entry_id: int):
    """One audit entry opened: who did what, and what changed (its before and after)."""
    entry = audit_entry_get(tenant=ctx.tenant, entry_id=entry_id)
    memory_id = f"mem_{entry.memory_id.hex}" if entry.memory_id else ""
    return render(request, "console/admin_audit_entry.html", {
        "ctx": ctx, "entry": entry, "changes": audit_changes(entry),
        "details": sorted((entry.details or {}).items()) if isinstance(entry.details, dict) else [],
        "memory_link": memory_id if entry.memory_id and entry.memory_id in live_memory_ids(
            tenant=ctx.tenant, ids=[entry.memory_id]) else "",
        "actor_name": key_names(tenant=ctx.tenant, actors={f"{entry.actor_kind}:{entry.actor_id}"}).get(
            f"{entry.actor_kind}:{entry.actor_id}", ""),
    })


@console_view(admin=True)
@require_GET
def people(request, ctx):
    """The tenant's people, to open one's memories (not only through the audit log)."""
    q = request.GET.get("q", "")[:200].strip()
    page = Paginator(subjects_list(tenant=ctx.tenant, q=q), AUDIT_PAGE_SIZE).get_page(request.GET.get("page"))
    return page_or_fragment(request, "console/admin_people.html", "people", {"ctx": ctx, "page": page, "q": q})


@console_view(admin=True)
@require_GET
def person_memories(request, ctx):
    """One person's memories as the admin sees them (their list, read-audited as the admin's read)."""
    subject_ref = request.GET.get("subject", "")
    subject = subject_find(tenant=ctx.tenant, external_id=subject_ref) if subject_ref else None
    if subject is None:
        raise NotFound("subject")
    form = MemoryFilterForm(request.GET)
    filters = {k: v for k, v in form.cleaned_data.items() if v} if form.is_valid() else {}
    page = Paginator(person_memory_list(tenant=ctx.tenant, subject_ref=subject_ref, **filters),
                     PAGE_SIZE).get_page(request.GET.get("page"))
    console_read(ctx, subject_ref, "list", page.object_list)
    query = request.GET.copy()
    query.pop("page", None)
    return page_or_fragment(request, "console/admin_person.html", "rows", {
        "ctx": ctx, "form": form, "page": page, "subject_ref": subject_ref, "query": query.urlencode(),
        "filtered": bool(filters),
    })


@console_view(admin=True)
@require_GET
def memory_detail(request, ctx, memory_id: str):
    subject_ref = memory_subject_ref(tenant=ctx.tenant, memory_id=memory_id)
    context = _detail_context(ctx, memory_id, subject_ref, admin=True) | {"admin_view": True, "subject_ref": subject_ref}
    return render(request, "console/memory_detail.html", context)


@console_view(admin=True)
@require_GET
def jobs(request, ctx):
    form = JobFilterForm(request.GET or None)
    filters = form.cleaned_data if form.is_valid() else {}
    qs = jobs_list(tenant=ctx.tenant, status=filters.get("status") or "", kind=filters.get("kind") or "",
                   job_id=(filters.get("job") or "").strip())
    page = Paginator(qs, JOB_PAGE_SIZE).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    return page_or_fragment(request, "console/admin_jobs.html", "jobs",
                            {"ctx": ctx, "form": form, "page": page, "query": query.urlencode()})


@console_view(admin=True)
@require_POST
def job_retry_view(request, ctx, job_id: str):
    pk = parse_public_id(job_id, "job")
    if pk is None:
        raise NotFound("job")
    try:
        job_retry(tenant=ctx.tenant, job_id=pk, actor=ctx.actor)
        messages.success(request, f"Job {job_id} is queued again.")
    except NotFound:
        raise
    except ApplicationError as error:
        messages.error(request, error.message)
    return redirect("console:admin_jobs")


@console_view(admin=True)
@require_GET
def quarantine(request, ctx):
    return render(request, "console/admin_quarantine.html",
                  {"ctx": ctx, "events": quarantined_events(tenant=ctx.tenant)[:200]})


def confirmed(request) -> bool:
    """Whether the POST came from the confirmation page (its hidden field): a form elsewhere that
    posts straight to the action only gets the confirmation page."""
    return request.method == "POST" and request.POST.get("confirm") == "yes"


QUARANTINE_CONFIRM = {
    "release": {
        "title": "Release this input to memory?",
        "lines": ["It goes on to extraction: its text becomes a memory agents can find (still labelled as "
                  "untrusted and never followed as an instruction), and facts may be drawn from it."],
        "cannot_undo": "It leaves quarantine for good. What is remembered from it can later be forgotten, "
                       "but agents may have read it by then.",
        "button": "Release to extraction",
        "danger": False,
    },
    "discard": {
        "title": "Discard this input?",
        "lines": ["Nothing from it will be remembered, and whatever was already remembered from it "
                  "(and derived from that) is forgotten."],
        "cannot_undo": "What is forgotten is deleted for good.",
        "button": "Discard it",
        "danger": True,
    },
}


@console_view(admin=True)
@require_http_methods(["GET", "POST"])
def quarantine_decide(request, ctx, event_id: str, decision: str):
    if decision not in QUARANTINE_CONFIRM:
        raise NotFound("event")
    event = quarantined_event_get(tenant=ctx.tenant, event_id=event_id)
    if not confirmed(request):
        return render(request, "console/confirm.html", {"ctx": ctx, "confirm": QUARANTINE_CONFIRM[decision] | {
            "quote": event.content, "action": request.path, "cancel": reverse("console:admin_quarantine"),
        }})
    try:
        if decision == "release":
            event_release(tenant=ctx.tenant, event_id=event.pk, actor=ctx.actor)
            messages.success(request, "Released: the event goes on to extraction.")
        else:
            event_discard(tenant=ctx.tenant, event_id=event.pk, actor=ctx.actor)
            messages.success(request, "Discarded: nothing from this event will be remembered.")
    except NotFound:
        raise
    except ApplicationError as error:
        messages.error(request, error.message)
    return redirect("console:admin_quarantine")


@console_view(admin=True)
@require_GET
def approvals(request, ctx):
    return render(request, "console/admin_approvals.html", {"ctx": ctx, "rows": pending_approvals(tenant=ctx.tenant)})


@console_view(admin=True)
@require_POST
def approval_decide(request, ctx, memory_id: str, decision: str):
    if decision not in ("approve", "reject"):
        raise NotFound("memory")
    memory = pending_memory_get(tenant=ctx.tenant, memory_id=memory_id)
    memory_review(tenant=ctx.tenant, memory=memory, approve=decision == "approve", actor=ctx.actor)
    messages.success(request, "Approved: agents will follow it." if decision == "approve" else "Rejected.")
    return redirect("console:admin_approvals")


@console_view(admin=True)
@require_http_methods(["GET", "POST"])
def api_keys(request, ctx):
    form = ApiKeyForm(request.POST or None)
    new_key = None
    if request.method == "POST" and form.is_valid():
        api_key, raw_key = api_key_create(
            tenant=ctx.tenant, subject_ref=form.cleaned_data["subject_ref"].strip(),
            name=form.cleaned_data["name"].strip(), actor=ctx.actor,
            max_source=form.cleaned_data["max_source"] or SourceKind.USER_EXPLICIT,
        )
        # Shown in this response only: it is stored hashed, so no page can show it again.
        new_key = {"key": api_key, "raw": raw_key}
        form = ApiKeyForm()
    response = render(request, "console/admin_keys.html",
                      {"ctx": ctx, "form": form, "new_key": new_key, "keys": api_keys_list(tenant=ctx.tenant)},
                      status=422 if form.errors else 200)
    response["Cache-Control"] = "no-store"
    return response


@console_view(admin=True)
@require_http_methods(["GET", "POST"])
def api_key_revoke_view(request, ctx, key_id):
    key = api_key_get(tenant=ctx.tenant, key_id=key_id)
    if key is None:
        raise NotFound("key")
    if not confirmed(request):
        name = key.name or "(no name)"
        return render(request, "console/confirm.html", {"ctx": ctx, "confirm": {
            "title": f"Revoke the key “{name}”?",
            "lines": [f"Key mk_{key.prefix}_… ({name}) stops working at once: every agent or backend using it is "
                      "refused from its next request."],
            "cannot_undo": "A revoked key never works again; to give access back, create a new key.",
            "button": "Revoke this key", "danger": True,
            "action": request.path, "cancel": reverse("console:admin_keys"),
        }})
    key = api_key_revoke(tenant=ctx.tenant, api_key_id=key_id, actor=ctx.actor)
    messages.success(request, f"Key {key.prefix}… is revoked.")
    return redirect("console:admin_keys")


@console_view(admin=True)
@require_GET
def api_key_reads(request, ctx, key_id):
    """Everything one of the tenant's keys read: when, of whom, which memories (query hashes only)."""
    key = api_key_get(tenant=ctx.tenant, key_id=key_id)
    if key is None:
        raise NotFound("key")
    page = Paginator(key_reads(tenant=ctx.tenant, key=key), PAGE_SIZE).get_page(request.GET.get("page"))
    page.object_list = read_rows(tenant=ctx.tenant, reads=page.object_list)
    return page_or_fragment(request, "console/reads.html", "reads", {"ctx": ctx, "page": page, "key": key})
