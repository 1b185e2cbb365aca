"""Console sign-in: single-use links minted by a tenant's backend, and the console accounts they
open. Only sha256(token) is stored; the plaintext lives in the URL handed to the user, once."""
import hashlib
import secrets
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.utils import timezone

from memoryapp.actors import Actor
from memoryapp.errors import ApplicationError
from memoryapp.models import ConsoleAccount, SignInLink, Tenant, TenantRoute
from memoryapp.services.audit import audit_record
from memoryapp.tenancy import tenant_activate

# The contract caps a link's life at 15 minutes: long enough to click, short enough to leak little.
SIGNIN_LINK_TTL = timedelta(minutes=15)
SIGNIN_LINK_PATH = "/console/link/"
USERNAME_MAX = 150


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@transaction.atomic
def signin_link_create(*, tenant: Tenant, subject_ref: str, actor: Actor,
                       ttl: timedelta = SIGNIN_LINK_TTL) -> tuple[str, datetime]:
    """A new single-use sign-in link for `subject_ref`: (url, expires_at). The url is absolute
    when PUBLIC_URL is set, site-relative otherwise."""
    if not subject_ref or len(subject_ref) > 200:
        raise ApplicationError("invalid_subject", "A subject id of 1 to 200 characters is required.")
    tenant_activate(tenant=tenant)
    token = secrets.token_urlsafe(32)
    expires_at = timezone.now() + min(ttl, SIGNIN_LINK_TTL)
    hashed = token_hash(token)
    link = SignInLink.objects.create(tenant=tenant, subject_ref=subject_ref, token_hash=hashed, expires_at=expires_at)
    # Found by its hash before its tenant is known (memory_signin_link_consume, migration 0013).
    TenantRoute.objects.create(kind=TenantRoute.Kind.SIGNIN_LINK, lookup=hashed, tenant=tenant)
    audit_record(
        tenant=tenant, actor=actor, action="console_link_created", subject_ref=subject_ref, target=str(link.id),
        details={"expires_at": expires_at.isoformat()},
    )
    return f"{settings.PUBLIC_URL}{SIGNIN_LINK_PATH}{token}", expires_at


@transaction.atomic
def signin_link_consume(token: str) -> tuple[int, str] | None:
    """(tenant_id, subject_ref) for a valid, unused, unexpired link, which is used up by this
    call; None otherwise. The tenant is unknown until the link is read, so the lookup goes
    through the SECURITY DEFINER function, which marks the link used in the same statement:
    two clicks racing on one link cannot both win."""
    if not isinstance(token, str) or not token or len(token) > 200:
        return None
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tenant_id, subject_ref FROM memory_signin_link_consume(%s)", [token_hash(token)]
        )
        row = cursor.fetchone()
    if row is None:
        return None
    tenant_id, subject_ref = row
    tenant = Tenant.objects.get(pk=tenant_id)
    tenant_activate(tenant=tenant)
    audit_record(
        # The subject is named in subject_ref; the actor id stays short (subject ids reach 200).
        tenant=tenant, actor=Actor("user", "signin_link"), action="console_link_used",
        subject_ref=subject_ref,
    )
    return tenant_id, subject_ref


def _subject_username(tenant: Tenant, subject_ref: str) -> str:
    username = f"{tenant.slug}:{subject_ref}"
    if len(username) > USERNAME_MAX:
        # Subject ids may be 200 characters; usernames only 150. A hash keeps it unique.
        username = f"{tenant.slug}:#{hashlib.sha256(subject_ref.encode()).hexdigest()[:40]}"
    return username


@transaction.atomic
def console_subject_user_get_or_create(*, tenant: Tenant, subject_ref: str):
    """The console user who owns `subject_ref`'s memories, created on first sign-in with an
    unusable password: they only ever come in through links."""
    account = ConsoleAccount.objects.select_related("user").filter(
        tenant=tenant, subject_ref=subject_ref, is_admin=False
    ).first()
    if account is not None:
        return account.user
    user = get_user_model().objects.create_user(username=_subject_username(tenant, subject_ref))
    ConsoleAccount.objects.create(user=user, tenant=tenant, subject_ref=subject_ref)
    tenant_activate(tenant=tenant)
    audit_record(
        tenant=tenant, actor=Actor("system", "console"), action="console_account_created",
        subject_ref=subject_ref, target=user.username, details={"via": "signin_link"},
    )
    return user


@transaction.atomic
def console_account_create(*, tenant: Tenant, email: str, password: str | None, subject_ref: str = "",
                           is_admin: bool = False, actor: Actor):
    """A password account (for admins, or a subject's owner without a link). The email is the
    username."""
    if bool(subject_ref) == bool(is_admin):
        raise ApplicationError("invalid_account", "An account is either a tenant admin or one subject's owner.")
    users = get_user_model().objects
    if users.filter(username=email).exists():
        raise ApplicationError("account_exists", f"A user named {email} already exists.", status=409)
    user = users.create_user(username=email, email=email, password=password)
    ConsoleAccount.objects.create(user=user, tenant=tenant, subject_ref=subject_ref, is_admin=is_admin)
    tenant_activate(tenant=tenant)
    audit_record(
        tenant=tenant, actor=actor, action="console_account_created", subject_ref=subject_ref, target=email,
        details={"is_admin": is_admin},
    )
    return user
