"""The person's own pages: sign-in, their memories, their data. Each view checks access
(console_view), calls a selector or a service, and renders one page or one of its fragments."""
import json
import re
from datetime import timedelta

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login, logout
from django.contrib.auth.forms import AuthenticationForm
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import push_url

from console import throttle
from console.access import console_view
from console.charts import growth_chart
from console.forms import CorrectionForm, EraseForm, MemoryFilterForm
from console.provenance import provenance
from console.readable_export import readable_export
from console.receipts import receipt_summary
from memoryapp.errors import ApplicationError, NotFound
from memoryapp.models import Job, Memory, Tenant
from memoryapp.selectors.console import (
    export_file_get, memory_growth, memory_timeline, person_exports, person_memories, version_sources,
)
from memoryapp.selectors.memories import job_get, job_is_theirs, memory_get, memory_history
from memoryapp.readpolicy import OWNER_VIEW
from memoryapp.selectors.forget import memory_forget_plan
from memoryapp.selectors.reads import read_rows, subject_reads
from memoryapp.services.memories import memory_correct, memory_forget, subject_erase_request
from memoryapp.services.profile import profile_get
from memoryapp.services.reads import read_audit_record
from memoryapp.services.restore import memory_restore
from memoryapp.services.signin import console_subject_user_get_or_create, signin_link_consume

PAGE_SIZE = 25
CORRECTABLE = (Memory.Status.ACTIVE, Memory.Status.PENDING_APPROVAL)
# What signin_link_create mints (secrets.token_urlsafe), with room for other lengths.
LINK_TOKEN_MAX = 200
LINK_TOKEN = re.compile(rf"[A-Za-z0-9_-]{{16,{LINK_TOKEN_MAX}}}")
ERASURE_SESSION_KEY = "console_erasure"
# How this session was opened ("link" or absent for a password), so signing out can send a person
# back the way they came in: someone who never had a password is not shown a password form.
SIGNIN_METHOD_KEY = "console_signin_method"


def page_or_fragment(request, template: str, fragment: str, context: dict, status: int = 200):
    """htmx asks for one fragment of the page; everyone else gets the whole page, and so does
    htmx restoring a history entry (it swaps in the whole body)."""
    wants_fragment = request.htmx and not request.htmx.boosted and not request.htmx.history_restore_request
    name = f"{template}#{fragment}" if wants_fragment else template
    return render(request, name, context, status=status)


# --- Signing in ----------------------------------------------------------------------------

@require_http_methods(["GET", "POST"])
def login_view(request):
    if request.user.is_authenticated and hasattr(request.user, "console"):
        return redirect("console:home")
    form = AuthenticationForm(request, data=request.POST or None)
    status, error = 200, ""
    if request.method == "POST":
        username, ip = request.POST.get("username", "")[:150], throttle.client_ip(request)
        if throttle.login_blocked(username, ip):
            form, status = AuthenticationForm(request), 429
            error = "Too many failed sign-ins. Wait a few minutes and try again."
        elif form.is_valid() and hasattr(form.get_user(), "console"):
            throttle.login_succeeded(username, ip)
            login(request, form.get_user())
            return redirect(_safe_next(request) or "console:home")
        else:
            throttle.login_failed(username, ip)
            status = 400
            if form.is_valid():  # right password, but no console account behind it
                form, error = AuthenticationForm(request), "This account has no access to the console."
    return render(request, "console/login.html", {"form": form, "error": error, "next": request.GET.get("next", "")},
                  status=status)


def _safe_next(request) -> str:
    from django.utils.http import url_has_allowed_host_and_scheme

    target = request.POST.get("next") or request.GET.get("next") or ""
    ok = url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()},
                                         require_https=request.is_secure())
    return target if ok else ""


@require_POST
def logout_view(request):
    by_link = request.session.get(SIGNIN_METHOD_KEY) == "link"
    logout(request)
    if by_link:
        return redirect("console:signed_out")
    messages.info(request, "You are signed out.")
    return redirect("console:login")


@require_GET
def signed_out(request):
    """Where a person who came in by a sign-in link lands after signing out: how to come back."""
    return render(request, "console/signed_out.html")


@require_http_methods(["GET", "POST"])
def signin_link(request, token: str):
    """A tenant's backend handed this person a single-use link: it opens the console as the
    owner of that subject, creating the account on first use.

    GET only shows a page with a button; the POST it sends (with the CSRF token) uses the link
    up. Mail scanners that fetch every link in a message therefore cannot burn it, and another
    site cannot quietly sign a visitor into an account of its choosing (login CSRF): a person
    has to press the button on our page. The GET looks at the token's shape only, never the
    database, so it neither uses a link up nor tells anybody whether a token exists."""
    if not LINK_TOKEN.fullmatch(token):
        # Longer than any link we make: most often a link pasted together with the text after it.
        too_long = len(token) > LINK_TOKEN_MAX
        return render(request, "console/link_invalid.html", {"too_long": too_long}, status=410)
    if request.method == "GET":
        response = render(request, "console/link_continue.html", {"token": token})
        response["Cache-Control"] = "no-store"
        return response
    consumed = signin_link_consume(token)
    if consumed is None:
        return render(request, "console/link_invalid.html", status=410)
    tenant_id, subject_ref = consumed
    user = console_subject_user_get_or_create(tenant=Tenant.objects.get(pk=tenant_id), subject_ref=subject_ref)
    login(request, user, backend="django.contrib.auth.backends.ModelBackend")
    request.session[SIGNIN_METHOD_KEY] = "link"
    # An absolute end, not one that slides with use: a session from a link lasts a bounded time.
    request.session.set_expiry(timezone.now() + timedelta(seconds=settings.CONSOLE_LINK_SESSION_SECONDS))
    return redirect("console:home")


# --- The person's memories -------------------------------------------------------------------

@console_view(subject=True)
@require_GET
def reads(request, ctx):
    """What was read about the person: by which key (its name) or console account, when, which
    memories. Only their own Subject row's reads, never those of an earlier holder of the id."""
    page = Paginator(subject_reads(tenant=ctx.tenant, subject_ref=ctx.subject_ref), PAGE_SIZE).get_page(
        request.GET.get("page"))
    page.object_list = read_rows(tenant=ctx.tenant, reads=page.object_list, subject_ref=ctx.subject_ref,
                                 own_username=request.user.get_username())
    return page_or_fragment(request, "console/reads.html", "reads", {"ctx": ctx, "page": page})


@console_view()
def home(request, ctx):
    if not ctx.subject_ref:
        return redirect("console:admin_audit")
    growth = memory_growth(tenant=ctx.tenant, subject_ref=ctx.subject_ref)
    timeline = memory_timeline(tenant=ctx.tenant, subject_ref=ctx.subject_ref)
    console_read(ctx, ctx.subject_ref, "list", [m for _, day in timeline for m in day])
    return render(request, "console/home.html", {
        "ctx": ctx,
        "timeline": timeline,
        "chart": growth_chart(growth),
        # What agents are given first about the person; they see all of it, special facts too.
        "profile": profile_get(tenant=ctx.tenant, subject_ref=ctx.subject_ref, policy=OWNER_VIEW),
    })


def console_read(ctx, subject_ref: str, operation: str, memories) -> None:
    """A person or an admin viewing memories in the console is a read like an agent's: recorded
    in the read audit, under the console account's name."""
    read_audit_record(tenant=ctx.tenant, actor=ctx.actor, subject_ref=subject_ref, operation=operation,
                      memory_ids=[m.pk for m in memories])


@console_view(subject=True)
@require_GET
def memory_list(request, ctx):
    form = MemoryFilterForm(request.GET or None)
    filters = form.cleaned_data if form.is_valid() else {}
    memories = person_memories(tenant=ctx.tenant, subject_ref=ctx.subject_ref,
                               **{k: v for k, v in filters.items() if v})
    page = Paginator(memories, PAGE_SIZE).get_page(request.GET.get("page"))
    console_read(ctx, ctx.subject_ref, "list", page.object_list)
    query = request.GET.copy()
    query.pop("page", None)
    return page_or_fragment(request, "console/memory_list.html", "rows", {
        "ctx": ctx, "form": form, "page": page, "query": query.urlencode(), "filtered": bool(filters and any(filters.values())),
    })


def _detail_context(ctx, memory_id: str, subject_ref: str, *, admin: bool = False) -> dict:
    history = memory_history(tenant=ctx.tenant, subject_ref=subject_ref, memory_id=memory_id)
    memory = history["memory"]
    console_read(ctx, subject_ref, "history", history["versions"] + history["derived"])
    # The supersession chain can hold records of another kind: the person's own message (an
    # episode) that a newer fact made out of date points to that fact as its successor. It is
    # not a version of the fact, nor the fact a version of it; each page names the other apart.
    versions = [v for v in history["versions"] if v.memory_type == memory.memory_type]
    others = [v for v in history["versions"] if v.memory_type != memory.memory_type]
    sources = version_sources(tenant=ctx.tenant, version_ids=[v.pk for v in versions])
    position = next(i for i, v in enumerate(versions) if v.pk == memory.pk)
    # A correction keeps the evidence of what it corrects (so forgetting it forgets those
    # messages too); on the page that evidence belongs to the earlier version, said as such.
    earlier_evidence = {e.pk for v in versions[:position] for e in sources[v.pk]}
    successor = memory.superseded_by if memory.superseded_by and not memory.superseded_by.erasing else None
    return {
        "ctx": ctx, "memory": memory, "history": history,
        "provenance": provenance(memory, admin=admin), "audience": "admin" if admin else "",
        "own_sources": [e for e in sources[memory.pk] if e.pk not in earlier_evidence],
        "carried_sources": [e for e in sources[memory.pk] if e.pk in earlier_evidence],
        "version_rows": [
            {"memory": v, "number": i, "relation": "this" if i - 1 == position else ("earlier" if i - 1 < position else "later"),
             "sources": sources[v.pk]}
            for i, v in enumerate(versions, 1)
        ],
        "version_number": position + 1, "version_count": len(versions),
        "current_version": next((v for v in versions if v.pk != memory.pk and v.status == Memory.Status.ACTIVE), None),
        "replaced": [v for v in versions if v.superseded_by_id == memory.pk],
        "replaced_by": successor if successor and successor.memory_type == memory.memory_type else None,
        "made_out_of_date_by": successor if successor and successor.memory_type != memory.memory_type else None,
        "made_out_of_date": [o for o in others if o.superseded_by_id == memory.pk],
        "derived_from": [m for m in memory.derived_from.all()],
        "source": memory.source_event,
    }


@console_view(subject=True)
@require_GET
def memory_detail(request, ctx, memory_id: str):
    context = _detail_context(ctx, memory_id, ctx.subject_ref)
    context["form"] = CorrectionForm(initial={"statement": context["memory"].statement})
    return page_or_fragment(request, "console/memory_detail.html", "memory", context)


@console_view(subject=True)
@require_POST
def memory_correct_view(request, ctx, memory_id: str):
    context = _detail_context(ctx, memory_id, ctx.subject_ref)
    form = CorrectionForm(request.POST)
    if context["provenance"].untrusted:
        # Text an agent read is not the person's to reword; they may forget it.
        form.is_valid()
        form.add_error("statement", "This is text an agent read, not something you said: forget it instead.")
    elif form.is_valid():
        try:
            new = memory_correct(tenant=ctx.tenant, memory=context["memory"], actor=ctx.actor,
                                 statement=form.cleaned_data["statement"])
        except ApplicationError as error:
            form.add_error("statement", _correction_error(error, context))
        else:
            url = reverse("console:memory_detail", args=[new.public_id])
            if not request.htmx:
                messages.success(request, "Corrected. The earlier version stays in the history.")
                return redirect(url)
            # The page shows the new version at once, and the address follows it.
            context = _detail_context(ctx, new.public_id, ctx.subject_ref)
            context["form"] = CorrectionForm(initial={"statement": new.statement})
            context["just_corrected"] = True
            return push_url(render(request, "console/memory_detail.html#memory", context), url)
    context["form"] = form
    # The typed text comes back in the form; a version replaced in the meantime (a page opened
    # before a correction elsewhere, or shown again by Back) sends it on to the current version.
    context["correct_target"] = _current_version(context)
    return page_or_fragment(request, "console/memory_detail.html", "memory", context, status=422)


def _current_version(context: dict):
    """The version that replaced this one, followed to the one that is current now (or None)."""
    version = context["memory"]
    for _ in range(100):  # a supersession chain is short; the bound only guards against a cycle
        if version is None or version.erasing:
            return None
        if version.status in CORRECTABLE:
            return version
        version = version.superseded_by
    return None


def _correction_error(error: ApplicationError, context: dict) -> str:
    if error.code != "memory_not_current":
        return error.message
    current = _current_version(context)
    if current is None:
        return "This version is no longer current and nothing has replaced it, so it cannot be corrected."
    return (f"This version was replaced in the meantime by “{current.statement[:80]}”. Your text is kept below: "
            "saving it now corrects the current version.")


@console_view(subject=True)
@require_POST
def memory_restore_view(request, ctx, memory_id: str):
    """An earlier version becomes the current one again, as a new version (services/restore.py)."""
    memory = memory_get(tenant=ctx.tenant, subject_ref=ctx.subject_ref, memory_id=memory_id)
    if provenance(memory).untrusted:
        raise ApplicationError("not_yours", "This is text an agent read: it cannot be made yours.", status=409)
    new = memory_restore(tenant=ctx.tenant, memory=memory, actor=ctx.actor)
    if new.status == Memory.Status.PENDING_APPROVAL:
        messages.success(request, "Restored as a new version. It is a procedure, so it waits for an administrator's "
                                  "approval; until then the current one stays.")
    else:
        messages.success(request, "Restored: this statement is the current version again. The version it replaced "
                                  "stays in the history.")
    return redirect("console:memory_detail", memory_id=new.public_id)


@console_view(subject=True)
@require_http_methods(["GET", "POST"])
def memory_forget_view(request, ctx, memory_id: str):
    history = memory_history(tenant=ctx.tenant, subject_ref=ctx.subject_ref, memory_id=memory_id)
    memory = history["memory"]
    if request.method == "POST":
        job = memory_forget(tenant=ctx.tenant, memory=memory, actor=ctx.actor)
        return redirect("console:job", job_id=job.public_id)
    plan = memory_forget_plan(memory=memory)
    return render(request, "console/memory_forget.html", {
        "ctx": ctx, "memory": memory, "plan": plan,
        "earlier": [m for m in plan.versions if m.pk != memory.pk],
        "also": len(plan.memories) - 1,
    })


# --- The person's data: export and erasure ----------------------------------------------------

@console_view(subject=True)
@require_GET
def data(request, ctx):
    return render(request, "console/data.html", _data_context(ctx, EraseForm(subject_ref=ctx.subject_ref)))


def _data_context(ctx, erase_form) -> dict:
    return {"ctx": ctx, "erase_form": erase_form,
            "exports": list(person_exports(tenant=ctx.tenant, subject_ref=ctx.subject_ref)[:20])}


@console_view(subject=True)
@require_POST
def data_export(request, ctx):
    try:
        from memoryapp.services.export import export_request
    except ImportError:  # the export runner ships separately; say so instead of failing
        raise ApplicationError("export_unavailable", "Export is not available on this server yet.", status=503)
    try:
        job = export_request(tenant=ctx.tenant, subject_ref=ctx.subject_ref, actor=ctx.actor)
    except NotFound:  # no subject yet: nothing has ever been stored
        raise ApplicationError("nothing_to_export", "Nothing is stored about you yet, so there is nothing to export.",
                               status=404)
    return redirect("console:job", job_id=job.public_id)


@console_view(subject=True)
@require_POST
def data_erase(request, ctx):
    form = EraseForm(request.POST, subject_ref=ctx.subject_ref)
    if not form.is_valid():
        return render(request, "console/data.html", _data_context(ctx, form), status=422)
    job = subject_erase_request(tenant=ctx.tenant, subject_ref=ctx.subject_ref, actor=ctx.actor)
    # The erasure deletes this person's console account too, which signs them out; the browser
    # that asked may still follow the job to its receipt, and nothing else.
    request.session[ERASURE_SESSION_KEY] = {"tenant_id": ctx.tenant.pk, "job_id": job.public_id}
    return redirect("console:erasure", job_id=job.public_id)


def export_id_of(job: Job) -> str:
    """The export named by a finished export job's `result.download` ("/api/v1/exports/exp_…")."""
    download = (job.result or {}).get("download") if isinstance(job.result, dict) else None
    if not download:
        return ""
    last = str(download).rstrip("/").rsplit("/", 1)[-1]
    return last if last.startswith("exp_") else ""


def _job_theirs_or_404(ctx, job: Job) -> None:
    # A person sees their own jobs only (not those of an earlier holder of their subject id);
    # an admin sees the tenant's, so an erasure's receipt outlives the account that asked.
    if not ctx.is_admin and not job_is_theirs(tenant=ctx.tenant, subject_ref=ctx.subject_ref, job=job):
        raise Http404("Not found")


@console_view()
@require_GET
def job_detail(request, ctx, job_id: str):
    job = job_get(tenant=ctx.tenant, job_id=job_id)
    _job_theirs_or_404(ctx, job)
    return page_or_fragment(request, "console/job.html", "job", _job_context(ctx, job, request.path))


def _erasure_job(request, job_id: str) -> Job:
    """The erasure this browser asked for (its session's record of the request), or 404."""
    asked = request.session.get(ERASURE_SESSION_KEY) or {}
    if asked.get("job_id") != job_id:
        raise Http404("Not found")
    try:
        return job_get(tenant=Tenant.objects.get(pk=asked["tenant_id"]), job_id=job_id)
    except (NotFound, Tenant.DoesNotExist):
        raise Http404("Not found")


@require_GET
def erasure_status(request, job_id: str):
    """The erasure this browser asked for, followed to its receipt after the account it was
    asked from is gone. Access is the session's record of the request, nothing else; the page
    shows no account in its header, since the account is being erased."""
    job = _erasure_job(request, job_id)
    context = _job_context(None, job, request.path, erasure_view=True)
    return page_or_fragment(request, "console/job.html", "job", context)


def _job_context(ctx, job: Job, poll_url: str, *, erasure_view: bool = False) -> dict:
    done, total = job.progress_done, job.progress_total
    subject_ref = ctx.subject_ref if ctx else ""
    finished = job.status in (Job.Status.SUCCEEDED, Job.Status.FAILED)
    receipt = job.kind == Job.Kind.DELETION and job.status == Job.Status.SUCCEEDED
    name = "console:erasure_receipt" if erasure_view else "console:job_receipt"
    return {
        "ctx": ctx, "job": job, "poll_url": poll_url, "finished": finished, "erasure_view": erasure_view,
        "percent": min(100, round(done * 100 / total)) if total else (100 if job.status == "succeeded" else None),
        "summary": receipt_summary(job) if job.kind == Job.Kind.DELETION else None,
        "receipt_json_url": reverse(name, args=[job.public_id, "json"]) if receipt else "",
        "receipt_print_url": reverse(name, args=[job.public_id, "print"]) if receipt else "",
        "back_url": _back_url(ctx, job),
        "result_json": json.dumps(job.result, indent=2, sort_keys=True, default=str),
        "export_id": export_id_of(job) if job.kind == Job.Kind.EXPORT and job.subject_ref == subject_ref else "",
        "export_expires": parse_datetime(str((job.result or {}).get("expires_at") or ""))
        if job.kind == Job.Kind.EXPORT and isinstance(job.result, dict) else None,
    }


def _back_url(ctx, job: Job) -> str:
    """Where the job page leads back to: the person's memories or data, the admin's jobs, or
    (after an erasure, with no account left) the sign-in page."""
    if ctx is None:
        return reverse("console:login")
    if ctx.subject_ref and job.subject_ref == ctx.subject_ref:
        return reverse("console:data") if job.kind == Job.Kind.EXPORT else reverse("console:memories")
    return reverse("console:admin_jobs") if ctx.is_admin else reverse("console:home")


def receipt_document(job: Job) -> dict:
    """The downloadable receipt: the job's own record and its result, as the runner wrote it."""
    return {
        "receipt_for": job.public_id,
        "what": "erasure of everything stored about a person" if (job.params or {}).get("scope") == "subject"
        else "forgetting of memories",
        "subject": job.subject_ref,
        "requested_by": job.actor,
        "requested_at": job.created_at,
        "finished_at": job.finished_at,
        "status": job.status,
        "receipt": job.result,
    }


def _receipt_response(request, ctx, job: Job, fmt: str):
    if job.kind != Job.Kind.DELETION or fmt not in ("json", "print"):
        raise Http404("Not found")
    if job.status != Job.Status.SUCCEEDED:
        raise ApplicationError("receipt_not_ready", "The receipt is ready once the job has finished.", status=409)
    if fmt == "json":
        response = HttpResponse(json.dumps(receipt_document(job), indent=2, sort_keys=True, default=str),
                                content_type="application/json")
        response["Content-Disposition"] = f'attachment; filename="receipt-{job.public_id}.json"'
    else:
        response = render(request, "console/receipt.html", {
            "ctx": ctx, "job": job, "summary": receipt_summary(job), "document": receipt_document(job),
        })
    response["Cache-Control"] = "no-store"
    return response


@console_view()
@require_GET
def job_receipt(request, ctx, job_id: str, fmt: str):
    """A deletion job's receipt, as JSON to keep or as a page to print; the person's own, or any
    of the tenant's for its admins (who can hand it on after the account is gone)."""
    job = job_get(tenant=ctx.tenant, job_id=job_id)
    _job_theirs_or_404(ctx, job)
    return _receipt_response(request, ctx, job, fmt)


@require_GET
def erasure_receipt(request, job_id: str, fmt: str):
    job = _erasure_job(request, job_id)
    try:
        return _receipt_response(request, None, job, fmt)
    except ApplicationError as error:
        return render(request, "console/error.html", {"error": error, "ctx": None}, status=error.status)


@console_view(subject=True)
@require_GET
def export_download(request, ctx, export_id: str):
    export = export_file_get(tenant=ctx.tenant, subject_ref=ctx.subject_ref, export_id=export_id)
    response = HttpResponse(bytes(export.content), content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="memory-export-{export.public_id}.json"'
    response["Cache-Control"] = "no-store"
    return response


@console_view(subject=True)
@require_GET
def export_readable(request, ctx, export_id: str):
    """The same export file as a page to read and print: what is remembered, with history."""
    export = export_file_get(tenant=ctx.tenant, subject_ref=ctx.subject_ref, export_id=export_id)
    response = render(request, "console/export_readable.html",
                      {"ctx": ctx, "export": export, "readable": readable_export(export.content)})
    response["Cache-Control"] = "no-store"
    return response
