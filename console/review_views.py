"""What waits for the person's answer (issue 15): what the assistant or a tool inferred about
them (confirm or reject), and facts that disagree (keep one, keep all, or correct). The tenant's
admin sees the conflicts queue of every subject, read-only: settling one is the person's word."""
from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from console.access import console_view
from console.forms import ConflictCorrectionForm
from memoryapp.errors import ApplicationError, NotFound
from memoryapp.models import Memory
from memoryapp.selectors.conflicts import conflicts_list
from memoryapp.selectors.memories import memory_get, memory_list
from memoryapp.services.candidates import memory_confirm, memory_reject
from memoryapp.services.conflicts import CORRECT, KEEP, KEEP_ALL, conflict_resolve

# The page shows at most this many inferences, newest first.
CANDIDATES_SHOWN = 100


def _review_context(ctx, *, correction_forms: dict | None = None) -> dict:
    candidates = memory_list(tenant=ctx.tenant, subject_ref=ctx.subject_ref, status=Memory.Status.CANDIDATE)
    conflicts = conflicts_list(tenant=ctx.tenant, subject_ref=ctx.subject_ref)
    forms = correction_forms or {}
    return {
        "ctx": ctx,
        "candidates": list(candidates[:CANDIDATES_SHOWN]),
        "conflicts": [{"conflict": c, "form": forms.get(c.id) or ConflictCorrectionForm()} for c in conflicts],
    }


@console_view(subject=True)
@require_GET
def review(request, ctx):
    return render(request, "console/review.html", _review_context(ctx))


@console_view(subject=True)
@require_POST
def candidate_decide(request, ctx, memory_id: str, decision: str):
    if decision not in ("confirm", "reject"):
        raise NotFound("memory")
    memory = memory_get(tenant=ctx.tenant, subject_ref=ctx.subject_ref, memory_id=memory_id)
    if decision == "confirm":
        memory_confirm(tenant=ctx.tenant, memory=memory, actor=ctx.actor)
        messages.success(request, "Confirmed: it is now remembered as you said it.")
    else:
        memory_reject(tenant=ctx.tenant, memory=memory, actor=ctx.actor)
        messages.success(request, "Rejected: it will not be used.")
    return redirect("console:review")


@console_view(subject=True)
@require_POST
def conflict_decide(request, ctx, conflict_id: str):
    resolution = request.POST.get("resolution", "")
    form, statement = None, None
    if resolution == CORRECT:
        form = ConflictCorrectionForm(request.POST)
        if not form.is_valid():
            return render(request, "console/review.html", _review_context(ctx, correction_forms={conflict_id: form}),
                          status=422)
        statement = form.cleaned_data["statement"]
    elif resolution not in (KEEP, KEEP_ALL):
        raise ApplicationError("invalid_request", "Choose how to settle it.", status=400)
    try:
        conflict_resolve(tenant=ctx.tenant, subject_ref=ctx.subject_ref, conflict_id=conflict_id,
                         resolution=resolution, memory_id=request.POST.get("memory_id"), statement=statement,
                         actor=ctx.actor)
    except ApplicationError as error:
        if form is None or error.status == 404:
            raise
        # A refused statement (a secret, say) is shown on its form; nothing was changed.
        form.add_error("statement", error.message)
        return render(request, "console/review.html", _review_context(ctx, correction_forms={conflict_id: form}),
                      status=422)
    messages.success(request, "Settled. What was replaced stays in the history.")
    return redirect("console:review")


@console_view(admin=True)
@require_GET
def admin_conflicts(request, ctx):
    return render(request, "console/admin_conflicts.html", {
        "ctx": ctx, "conflicts": conflicts_list(tenant=ctx.tenant),
        "accept_inferences": ctx.tenant.accept_inferences,
    })
