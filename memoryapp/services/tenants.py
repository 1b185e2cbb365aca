import hashlib
import secrets

from django.db import transaction
from django.utils import timezone

from memoryapp.actors import Actor
from memoryapp.errors import ApplicationError, NotFound
from memoryapp.models import ApiKey, SourceKind, Subject, Tenant, TenantRoute
from memoryapp.services.audit import audit_chain_init, audit_record
from memoryapp.tenancy import tenant_activate, tenant_activate_and_query

API_KEY_PREFIX = "mk"


def key_hash(raw_key: str) -> str:
    return hashlib.sha256(raw_key.encode()).hexdigest()


@transaction.atomic
def tenant_create(*, slug: str, name: str = "") -> Tenant:
    tenant, _ = Tenant.objects.get_or_create(slug=slug, defaults={"name": name or slug})
    tenant_activate(tenant=tenant)
    audit_chain_init(tenant=tenant)
    return tenant


@transaction.atomic
def subject_get_or_create(*, tenant: Tenant, external_id: str, kind: str = Subject.Kind.USER) -> Subject:
    """The subject a write is about, created on first write. Refuses one being erased: an
    erasure marks first, so nothing new can slip in behind it."""
    tenant_activate(tenant=tenant)
    subject, _ = Subject.objects.get_or_create(tenant=tenant, external_id=external_id, defaults={"kind": kind})
    return _writable(subject)


def _writable(subject: Subject) -> Subject:
    if subject.status == Subject.Status.ERASING:
        raise ApplicationError("subject_erasing", "This subject is being erased.", status=409)
    return subject


def subject_locked_for_write(*, tenant: Tenant, external_id: str) -> Subject:
    """subject_get_or_create's subject, with its row locked until the transaction ends (one writer
    per subject at a time); call inside the tenant's transaction. Found and locked in one
    statement when it exists, as it does for every write but a person's first: four round trips
    fewer than getting or creating it first. One being erased is refused once the lock is held; a
    writer that waited on the lock while an erasure's last transaction deleted the row finds none
    and creates the subject anew, as a write after the erasure would (the id is free again)."""
    tenant_activate(tenant=tenant)
    subject = Subject.objects.select_for_update().filter(tenant=tenant, external_id=external_id).first()
    if subject is None:
        subject = subject_get_or_create(tenant=tenant, external_id=external_id)
        subject = Subject.objects.select_for_update().get(pk=subject.pk)
    return _writable(subject)


@transaction.atomic
def api_key_create(*, tenant: Tenant, subject_ref: str = "", name: str = "", actor: Actor,
                   max_source: str = SourceKind.USER_EXPLICIT) -> tuple[ApiKey, str]:
    """Returns the key and its one-time plaintext (`mk_<prefix>_<secret>`); only a hash is stored.
    `max_source` is the highest source the key may claim (services/authority.py)."""
    tenant_activate(tenant=tenant)
    prefix = secrets.token_hex(6)
    raw_key = f"{API_KEY_PREFIX}_{prefix}_{secrets.token_urlsafe(32)}"
    api_key = ApiKey.objects.create(
        tenant=tenant, subject_ref=subject_ref, name=name, prefix=prefix, key_hash=key_hash(raw_key),
        max_source=max_source,
    )
    # Found by its prefix before its tenant is known (memory_api_key_lookup, migration 0013).
    TenantRoute.objects.create(kind=TenantRoute.Kind.API_KEY, lookup=prefix, tenant=tenant)
    audit_record(
        tenant=tenant, actor=actor, action="api_key_created", subject_ref=subject_ref, target=str(api_key.id),
        details={"name": name, "prefix": prefix, "bound_subject": subject_ref or None, "max_source": max_source},
    )
    return api_key, raw_key


@transaction.atomic
def api_key_revoke(*, tenant: Tenant, api_key_id, actor: Actor) -> ApiKey:
    tenant_activate(tenant=tenant)
    api_key = ApiKey.objects.select_for_update().filter(tenant=tenant, id=api_key_id).first()
    if api_key is None:
        raise NotFound("api_key")
    if api_key.revoked_at is None:
        api_key.revoked_at = timezone.now()
        api_key.save(update_fields=["revoked_at"])
        audit_record(
            tenant=tenant, actor=actor, action="api_key_revoked", subject_ref=api_key.subject_ref,
            target=str(api_key.id), details={"prefix": api_key.prefix},
        )
    return api_key


def api_key_authenticate(raw_key: str) -> ApiKey | None:
    """Resolve a presented key to its (active) ApiKey, before any tenant is known.

    The key table is tenant-scoped by row-level security, so the lookup by prefix goes through
    a SECURITY DEFINER function that returns the one matching row and nothing else."""
    parts = raw_key.split("_", 2)
    if len(parts) != 3 or parts[0] != API_KEY_PREFIX or not parts[1]:
        return None
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT id, tenant_id, key_hash, revoked_at FROM memory_api_key_lookup(%s)", [parts[1]])
        row = cursor.fetchone()
    if row is None:
        return None
    key_id, tenant_id, stored_hash, revoked_at = row
    if revoked_at is not None or not secrets.compare_digest(stored_hash, key_hash(raw_key)):
        return None
    # The tenant binding and the key with its tenant in one round trip (the ORM's
    # select_related("tenant").get() would be a second one, and a query compilation per request).
    rows = tenant_activate_and_query(tenant=tenant_id, sql=_KEY_WITH_TENANT, params={"id": key_id})
    if not rows:  # deleted in between
        return None
    row = rows[0]
    api_key = ApiKey.from_db(connection.alias, _KEY_NAMES, row[:len(_KEY_NAMES)])
    ApiKey.tenant.field.set_cached_value(api_key, Tenant.from_db(connection.alias, _TENANT_NAMES,
                                                                 row[len(_KEY_NAMES):]))
    return api_key


_KEY_NAMES = [f.attname for f in ApiKey._meta.concrete_fields]
_TENANT_NAMES = [f.attname for f in Tenant._meta.concrete_fields]
_KEY_WITH_TENANT = (
    "SELECT " + ", ".join([f'k."{f.column}"' for f in ApiKey._meta.concrete_fields]
                          + [f't."{f.column}"' for f in Tenant._meta.concrete_fields])
    + " FROM memoryapp_apikey k JOIN memoryapp_tenant t ON t.id = k.tenant_id WHERE k.id = %(id)s"
)


@transaction.atomic
def tenant_settings_update(*, tenant: Tenant, accept_inferences: bool, actor: Actor) -> Tenant:
    """Change a tenant's write-policy settings, audited with the value before and after."""
    tenant_activate(tenant=tenant)
    tenant = Tenant.objects.select_for_update().get(pk=tenant.pk)
    before = {"accept_inferences": tenant.accept_inferences}
    if tenant.accept_inferences != accept_inferences:
        tenant.accept_inferences = accept_inferences
        tenant.save(update_fields=["accept_inferences"])
        audit_record(tenant=tenant, actor=actor, action="tenant_settings_changed", before=before,
                     after={"accept_inferences": accept_inferences})
    return tenant
