"""The console's one access resolver: who is signed in, which tenant (and subject) that gives
them, and a decorator every view (page or fragment) goes through. htmx can request any
fragment directly, so the check lives here and never in a template."""
from dataclasses import dataclass
from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.db import OperationalError, transaction
from django.http import Http404
from django.shortcuts import render
from django_htmx.http import HttpResponseClientRedirect

from memoryapp.actors import Actor
from memoryapp.errors import ApplicationError, NotFound
from memoryapp.models import ConsoleAccount, Tenant
from memoryapp.tenancy import tenant_activate


@dataclass(frozen=True)
class ConsoleContext:
    tenant: Tenant
    subject_ref: str
    is_admin: bool
    actor: Actor


def console_context(request) -> ConsoleContext:
    """The signed-in user's tenant and subject, with the request's transaction bound to that
    tenant (ATOMIC_REQUESTS gives every request one). A user without a console account gets 403."""
    try:
        account = ConsoleAccount.objects.select_related("tenant").get(user=request.user)
    except ConsoleAccount.DoesNotExist:
        raise PermissionDenied("This user has no console account.")
    tenant_activate(tenant=account.tenant)
    return ConsoleContext(
        tenant=account.tenant,
        subject_ref=account.subject_ref,
        is_admin=account.is_admin,
        actor=Actor("user", request.user.get_username()),
    )


def console_view(*, admin: bool = False, subject: bool = False):
    """Sign-in required; `admin` pages need a tenant admin, `subject` pages a subject's owner.
    The view receives the ConsoleContext after the request. A missing or foreign object
    (NotFound) is a 404; any other domain error is shown, never a 500."""

    def decorator(view):
        @wraps(view)
        def wrapper(request, *args, **kwargs):
            if not request.user.is_authenticated:
                if request.htmx:
                    # A fragment request must not swap the login page into the page's middle.
                    return HttpResponseClientRedirect(redirect_to_login(request.get_full_path()).url)
                return redirect_to_login(request.get_full_path())
            ctx = console_context(request)
            if admin and not ctx.is_admin:
                raise PermissionDenied("Tenant administrators only.")
            if subject and not ctx.subject_ref:
                raise PermissionDenied("This page is for a person's own memories.")
            try:
                return view(request, ctx, *args, **kwargs)
            except NotFound:
                raise Http404("Not found")
            except ApplicationError as error:
                return render(request, "console/error.html", {"error": error, "ctx": ctx}, status=error.status)
            except OperationalError:
                # A statement or lock timeout (or a lost database): say so at once, like the API's
                # 503, instead of an error page; the request's transaction is rolled back.
                if transaction.get_connection().in_atomic_block:
                    transaction.set_rollback(True)
                error = ApplicationError("memory_unavailable", "Your memories are briefly unavailable. "
                                         "Try again in a moment.", status=503)
                return render(request, "console/error.html", {"error": error, "ctx": ctx}, status=503)

        return wrapper

    return decorator
