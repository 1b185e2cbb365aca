"""The governable memory store: who a memory is about, where it came from, when it held,
what replaced it, what was derived from it, and the audit trail of every change.

Every table that belongs to a tenant carries ``tenant_id`` and is guarded by PostgreSQL
row-level security (see migrations/0002_row_level_security.py): the application's database
role sees only the rows of the tenant set for the current transaction.

Ready for Citus (docs/scaling.md): in the database, every such table's primary key is
(tenant_id, id), every unique constraint starts with tenant_id, and every foreign key between two
of them is (tenant_id, x_id) -> (tenant_id, id) (migrations 0013-0016, RunSQL). The ORM keeps its
single `id` primary key, and the foreign keys between tenant tables are `db_constraint=False`: the
database's composite constraint stands in for Django's single-column one, which would need `id`
alone to be unique. tests/memoryapp/test_citus_readiness.py holds the rule.

So tenant_id needs no index of its own on those tables: the primary key serves every read by
tenant. A second, one-column index was only a smaller one for the planner to prefer, and while
the statistics did not know a tenant yet it did, for lookups by id, by event or by job
(migration 0019).
"""
import uuid

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from django.db.models import F, Value
from django.db.models.lookups import IRegex
from pgvector.django import VectorField

EMBEDDING_DIMENSIONS = 384
# A word that dates something, or a year (PostgreSQL regex: \m and \M are word boundaries).
TIME_REFERENCE_REGEX = (
    r"\m(yesterday|today|tonight|tomorrow|ago|last|next|recently|weekend|since|until|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|"
    r"january|february|march|april|may|june|july|august|september|october|november|december|"
    r"week|month|year|years|months|weeks|days|morning|evening|night|\d{4})\M"
)


class VectorArrayField(models.Field):
    """`vector(n)[]`: several embeddings in one column (pgvector has no array field of its
    own). Written from a list of StoredVector or arrays; read only inside SQL (retrieval.py),
    so rows load it as the database's text, if at all (MemoryManager leaves it out)."""

    def __init__(self, *args, dimensions: int, **kwargs):
        self.dimensions = dimensions
        super().__init__(*args, **kwargs)

    def deconstruct(self):
        name, path, args, kwargs = super().deconstruct()
        kwargs["dimensions"] = self.dimensions
        return name, path, args, kwargs

    def db_type(self, connection):
        return f"vector({self.dimensions})[]"

    def get_db_prep_value(self, value, connection, prepared=False):
        if value is None or isinstance(value, str):
            return value
        if not len(value):
            return None
        texts = [v.to_text() if hasattr(v, "to_text") else "[" + ",".join(f"{x:.9g}" for x in v) + "]"
                 for v in value]
        return "{" + ",".join(f'"{text}"' for text in texts) + "}"


class MemoryManager(models.Manager):
    def get_queryset(self):
        # A memory's clause vectors are for ranking inside SQL; loading them with every row
        # would multiply what a list of memories reads.
        return super().get_queryset().defer("clause_embeddings")


class Tenant(models.Model):
    """A customer of the service. Not itself tenant-scoped: it is the scope."""

    slug = models.SlugField(max_length=100, unique=True)
    name = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # Whether what an assistant or a tool inferred becomes a current fact at once. Off by default:
    # an inference waits as a candidate until the person confirms it (seed 001 §4.2).
    accept_inferences = models.BooleanField(default=False, db_default=False)

    def __str__(self) -> str:
        return self.slug


class Subject(models.Model):
    class Kind(models.TextChoices):
        USER = "user"
        AGENT = "agent"
        ORG = "org"

    class Status(models.TextChoices):
        ACTIVE = "active"
        # Marked before an erasure deletes anything, so nothing new is written or returned.
        ERASING = "erasing"

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, db_index=False)  # the primary key leads with it
    external_id = models.CharField(max_length=200)
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.USER)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACTIVE)
    last_seq = models.BigIntegerField(default=0)
    # The distinct speakers of the subject's events, as given. Search reads them so that a query
    # naming a person in the conversation treats the name as who said it, not as words to match
    # (retrieval.query_match_text); kept by event_append, recomputed when erasure deletes events.
    speakers = ArrayField(models.CharField(max_length=200), default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "external_id"], name="subject_unique_per_tenant"),
        ]

    def __str__(self) -> str:
        return self.external_id


class SourceKind(models.TextChoices):
    USER_EXPLICIT = "user_explicit"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"
    EXTERNAL = "external"
    SYSTEM = "system"


# Untrusted content may be kept as evidence but never becomes a durable fact or instruction.
UNTRUSTED_SOURCES = frozenset({SourceKind.EXTERNAL})


class Event(models.Model):
    """A raw source event. Append-only: only its processing state and redaction ever change."""

    class Role(models.TextChoices):
        USER = "user"
        ASSISTANT = "assistant"
        TOOL = "tool"
        SYSTEM = "system"

    class Status(models.TextChoices):
        PENDING = "pending"
        PROCESSING = "processing"
        PROCESSED = "processed"
        FAILED = "failed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, db_index=False)  # the primary key leads with it
    subject = models.ForeignKey(Subject, on_delete=models.CASCADE, related_name="events", db_constraint=False)
    event_id = models.CharField(max_length=200)
    seq = models.BigIntegerField()
    role = models.CharField(max_length=10, choices=Role.choices)
    source_kind = models.CharField(max_length=20, choices=SourceKind.choices)
    content = models.TextField()
    occurred_at = models.DateTimeField()
    recorded_at = models.DateTimeField(auto_now_add=True)
    session_id = models.CharField(max_length=200, blank=True, default="")
    speaker = models.CharField(max_length=200, blank=True, default="")
    metadata = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    claimed_at = models.DateTimeField(null=True, blank=True)
    processed_at = models.DateTimeField(null=True, blank=True)
    # Set when the write policy removed secrets from `content`.
    redacted = models.BooleanField(default=False)
    # Quarantine: untrusted or instruction-like input an admin may release or discard.
    quarantined = models.BooleanField(default=False)
    # Marked when a forget takes this message (it states what is forgotten): never shown, exported,
    # summarised or replayed again, though the deletion job may not have run yet.
    erasing = models.BooleanField(default=False)
    flags = models.JSONField(default=list, blank=True)
    error = models.TextField(blank=True, default="")
    job = models.ForeignKey("Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
                            db_constraint=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "subject", "event_id"], name="event_id_unique_per_subject"),
            models.UniqueConstraint(fields=["tenant", "subject", "seq"], name="event_seq_unique_per_subject"),
        ]
        indexes = [
            models.Index(fields=["tenant", "status", "recorded_at"], name="event_outbox_idx"),
            models.Index(fields=["subject", "occurred_at", "seq"], name="event_order_idx"),
        ]

    @property
    def public_id(self) -> str:
        return f"evt_{self.id.hex}"

    @property
    def is_untrusted(self) -> bool:
        return self.source_kind in UNTRUSTED_SOURCES


class Memory(models.Model):
    class Type(models.TextChoices):
        SEMANTIC = "semantic"
        EPISODIC = "episodic"
        PROCEDURAL = "procedural"

    class Status(models.TextChoices):
        ACTIVE = "active"
        SUPERSEDED = "superseded"
        EXPIRED = "expired"
        PENDING_APPROVAL = "pending_approval"
        REJECTED = "rejected"
        # The episode of a quarantined event: kept for the admin's decision, seen by no agent
        # (and not listed as the person's memory) until it is released.
        QUARANTINED = "quarantined"
        # What an assistant or a tool inferred: kept for the person to confirm or reject, and
        # left out of search, context and the profile until then (policy.initial_status).
        CANDIDATE = "candidate"

    class Sensitivity(models.TextChoices):
        PUBLIC = "public"
        INTERNAL = "internal"
        PERSONAL = "personal"
        SPECIAL = "special"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, db_index=False)  # the primary key leads with it
    subject = models.ForeignKey(Subject, on_delete=models.CASCADE, related_name="memories", db_constraint=False)
    memory_type = models.CharField(max_length=12, choices=Type.choices, default=Type.SEMANTIC)
    namespace = models.CharField(max_length=300, blank=True, default="")
    statement = models.TextField()
    # Normalised (entity, attribute) key, e.g. "user:home_city", used to find what a fact supersedes.
    key = models.CharField(max_length=200, blank=True, default="")
    source_kind = models.CharField(max_length=20, choices=SourceKind.choices)
    source_event = models.ForeignKey(Event, null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
                                     db_constraint=False)
    evidence = models.ManyToManyField(Event, through="MemoryEvidence", related_name="memories")
    derived_from = models.ManyToManyField(
        "self", through="MemoryLineage", symmetrical=False, related_name="derivatives"
    )
    evidence_count = models.PositiveIntegerField(default=1)
    confidence = models.FloatField(default=1.0)
    importance = models.FloatField(default=0.5)
    sensitivity = models.CharField(max_length=10, choices=Sensitivity.choices, default=Sensitivity.PERSONAL)
    valid_from = models.DateTimeField()
    valid_to = models.DateTimeField(null=True, blank=True)
    recorded_at = models.DateTimeField(auto_now_add=True)
    superseded_by = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="supersedes", db_constraint=False
    )
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.ACTIVE)
    status_reason = models.CharField(max_length=100, blank=True, default="")
    # A proposal (a procedure waiting for approval) names the current memory it would replace;
    # that one stays current until an admin approves, and stays for good if they reject.
    proposal_for = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="proposals", db_constraint=False
    )
    expires_at = models.DateTimeField(null=True, blank=True)
    access_count = models.PositiveIntegerField(default=0)
    last_accessed_at = models.DateTimeField(null=True, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    flags = models.JSONField(default=list, blank=True)
    # Marked before an erasure deletes it: never returned again, whatever its status.
    erasing = models.BooleanField(default=False)
    content_hash = models.CharField(max_length=64)
    embedding = VectorField(dimensions=EMBEDDING_DIMENSIONS, null=True, blank=True)
    # The statement's clauses, each embedded alone (memoryapp/clauses.py), when it has two or
    # more: a fact said in passing inside a message about something else is found by its clause.
    clause_embeddings = VectorArrayField(dimensions=EMBEDDING_DIMENSIONS, null=True, blank=True)
    embedding_version = models.CharField(max_length=100, blank=True, default="")
    extractor_version = models.CharField(max_length=100, blank=True, default="")
    search_vector = models.GeneratedField(
        expression=SearchVector("statement", config="english"),
        output_field=SearchVectorField(),
        db_persist=True,
    )
    # Whether the statement says when something happened (retrieval prefers such memories for a
    # "when" question). Stored with the row: matched per search, the regex cost ~15 ms at 700
    # memories.
    has_time_reference = models.GeneratedField(
        expression=IRegex(F("statement"), Value(TIME_REFERENCE_REGEX)),
        output_field=models.BooleanField(),
        db_persist=True,
    )

    objects = MemoryManager()

    class Meta:
        indexes = [
            models.Index(fields=["tenant", "subject", "status"], name="memory_scope_idx"),
            models.Index(fields=["subject", "content_hash"], name="memory_dedupe_idx"),
            models.Index(fields=["subject", "key"], name="memory_key_idx"),
            # "The episode of this event" (migration 0018 says why it is partial).
            models.Index(fields=["source_event", "tenant"], name="memory_episode_of_event_idx",
                         condition=models.Q(memory_type="episodic")),
            # No HNSW index on the embedding: no query reads one (search ranks a subject's
            # candidates exactly, retrieval.py), and every write paid for it (migration 0020).
            GinIndex(fields=["search_vector"], name="memory_search_vector_gin"),
        ]

    @property
    def public_id(self) -> str:
        return f"mem_{self.id.hex}"

    @property
    def is_untrusted(self) -> bool:
        return self.source_kind in UNTRUSTED_SOURCES


class MemoryChange(models.Model):
    """A memory version's status and valid_to as they were before one change to either, and when
    the change was recorded. Written by a database trigger (migration 0008) on every such update,
    whichever code path makes it (supersession, correction, approval, rejection, expiry), so the
    store can answer "what did we believe at known_at": a version's state at a recorded time is
    the `status`/`valid_to` of its first change after that time, or its current state if none."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, db_index=False)  # the primary key leads with it
    memory = models.ForeignKey("Memory", on_delete=models.CASCADE, related_name="changes", db_constraint=False)
    changed_at = models.DateTimeField()
    status = models.CharField(max_length=20)
    valid_to = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["memory", "changed_at"], name="memorychange_memory_idx")]


class MemoryEvidence(models.Model):
    """A memory's source events (lineage to the raw record)."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, db_index=False)  # the primary key leads with it
    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="evidence_links", db_constraint=False)
    # Indexed by evidence_of_event_idx (event first, then tenant), not by a one-column index of its own.
    event = models.ForeignKey(Event, on_delete=models.CASCADE, related_name="evidence_links", db_constraint=False,
                              db_index=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "memory", "event"], name="evidence_unique"),
        ]
        # "What was drawn from this event" (migration 0018 says why).
        indexes = [models.Index(fields=["event", "tenant"], name="evidence_of_event_idx")]


class MemoryLineage(models.Model):
    """A derived memory (summary, consolidation, profile) and one memory it was derived from."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, db_index=False)  # the primary key leads with it
    derived = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="source_links", db_constraint=False)
    source = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="derived_links", db_constraint=False)
    kind = models.CharField(max_length=30, default="derived")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "derived", "source"], name="lineage_unique"),
        ]


class Job(models.Model):
    class Kind(models.TextChoices):
        EXTRACTION = "extraction"
        DELETION = "deletion"
        EXPORT = "export"
        CONSOLIDATION = "consolidation"
        REINDEX = "reindex"
        REPLAY = "replay"
        FORGETTING = "forgetting"

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, db_index=False)  # the primary key leads with it
    # The subject's external id, kept as text: a deletion job outlives the subject it erased.
    subject_ref = models.CharField(max_length=200, blank=True, default="")
    # Which Subject row (which person) the job was about: an id can be reused after an erasure,
    # and the next person with it must not see the previous one's jobs. Not a foreign key,
    # for the same reason as subject_ref.
    subject_row_id = models.BigIntegerField(null=True, blank=True)
    kind = models.CharField(max_length=20, choices=Kind.choices)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    progress_done = models.PositiveIntegerField(default=0)
    progress_total = models.PositiveIntegerField(default=0)
    params = models.JSONField(default=dict, blank=True)
    result = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True, default="")
    attempts = models.PositiveIntegerField(default=0)
    actor = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["tenant", "status", "created_at"], name="job_status_idx")]

    @property
    def public_id(self) -> str:
        return f"job_{self.id.hex}"


class AuditEntry(models.Model):
    """Append-only, hash-chained per tenant (services/audit.py).

    An entry is inserted by the transaction that makes the change it records (so no change
    commits without its entry) and sealed into the chain right after that commit: `seq`,
    `prev_hash` and `entry_hash` are set once, by the sealer. The chain hashes a digest of the
    payload, not the payload itself, so an erasure can blank `before`/`after`; every blanking is
    itself an `audit_redacted` entry that names the entries it blanked."""

    class ActorKind(models.TextChoices):
        API_KEY = "api_key"
        USER = "user"
        WORKER = "worker"
        SYSTEM = "system"

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, db_index=False)  # the primary key leads with it
    # Null until sealed.
    seq = models.BigIntegerField(null=True, blank=True)
    actor_kind = models.CharField(max_length=10, choices=ActorKind.choices)
    actor_id = models.CharField(max_length=200, blank=True, default="")
    action = models.CharField(max_length=50)
    subject_ref = models.CharField(max_length=200, blank=True, default="")
    # The Subject row the entry is about: a subject id reused after an erasure is a new person,
    # whose export and pages must not show the previous one's trail. Not a foreign key: the
    # entry outlives the row.
    subject_row_id = models.BigIntegerField(null=True, blank=True)
    memory_id = models.UUIDField(null=True, blank=True)
    target = models.CharField(max_length=200, blank=True, default="")
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    details = models.JSONField(default=dict, blank=True)
    payload_digest = models.CharField(max_length=64)
    prev_hash = models.CharField(max_length=64, blank=True, default="")
    entry_hash = models.CharField(max_length=64, blank=True, default="")
    # Which fields the entry hash covers (services/audit.py HASHERS): 1 for entries written
    # before the chain covered every column, 2 since.
    hash_version = models.PositiveSmallIntegerField(default=1)
    redacted_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "seq"], name="audit_seq_unique")]
        indexes = [
            models.Index(fields=["tenant", "subject_ref", "created_at"], name="audit_subject_idx"),
            models.Index(fields=["tenant", "subject_row_id", "seq"], name="audit_subject_row_idx"),
            models.Index(fields=["tenant", "memory_id"], name="audit_memory_idx"),
            models.Index(fields=["tenant", "action", "created_at"], name="audit_action_idx"),
            models.Index(fields=["tenant", "id"], name="audit_unsealed_idx", condition=models.Q(seq__isnull=True)),
        ]

    @property
    def is_sealed(self) -> bool:
        return self.seq is not None


class AuditChain(models.Model):
    """The head of a tenant's audit chain; its row lock serialises appends per tenant."""

    tenant = models.OneToOneField(Tenant, on_delete=models.CASCADE, primary_key=True)
    seq = models.BigIntegerField(default=0)
    head_hash = models.CharField(max_length=64, default="0" * 64)


class ApiKey(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, db_index=False)  # the primary key leads with it
    # Bound keys name their subject by external id, so erasing and re-creating it keeps the bond.
    subject_ref = models.CharField(max_length=200, blank=True, default="")
    name = models.CharField(max_length=200, blank=True, default="")
    # Unique per tenant here; unique across tenants in TenantRoute, which answers "whose key is
    # this" before a tenant is known.
    prefix = models.CharField(max_length=16)
    key_hash = models.CharField(max_length=64)
    # The highest source this key may claim for what it writes (policy.source_allowed); the
    # default claims anything, as the v1 contract does.
    max_source = models.CharField(max_length=20, choices=SourceKind.choices, default=SourceKind.USER_EXPLICIT,
                                  db_default=SourceKind.USER_EXPLICIT)
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "prefix"], name="apikey_prefix_unique_per_tenant")]

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


class ReadAudit(models.Model):
    """Which key read which memories, for which query hash: never the query or the content."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, db_index=False)  # the primary key leads with it
    actor = models.CharField(max_length=200)
    subject_ref = models.CharField(max_length=200)
    operation = models.CharField(max_length=20)
    query_hash = models.CharField(max_length=64, blank=True, default="")
    memory_ids = ArrayField(models.UUIDField(), default=list)
    # The Subject row read (see Job.subject_row_id): the trail shown to a person is their own even
    # when their id was used before. Null when no such subject existed at the time of the read.
    subject_row_id = models.BigIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # The data purpose the read named (seed 001 §6: purpose is checked on every read); "" when none.
    # db_default too: a process still on the previous release inserts without the column.
    purpose = models.CharField(max_length=64, blank=True, default="", db_default="")
    # Whether the memories this read returned are in their access counts yet. A search or a
    # context writes false; the worker adds it to the memories later (services/accesses.py), so a
    # read never waits for a memory's row lock (an extraction's chunk holds them for seconds).
    # Other reads count nothing and write true, as do rows from before the column (counted as
    # they were read) and rows of a process on the previous release (migration 0021).
    accesses_counted = models.BooleanField(default=True, db_default=True)

    class Meta:
        indexes = [
            models.Index(fields=["tenant", "id"], name="readaudit_uncounted_idx",
                         condition=models.Q(accesses_counted=False)),
            models.Index(fields=["tenant", "created_at"], name="readaudit_time_idx"),
            models.Index(fields=["tenant", "subject_row_id", "created_at"], name="readaudit_subject_idx"),
            GinIndex(fields=["memory_ids"], name="readaudit_memory_gin"),
        ]


class ExportFile(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, db_index=False)  # the primary key leads with it
    subject_ref = models.CharField(max_length=200)
    # The Subject row it was made from (see Job.subject_row_id).
    subject_row_id = models.BigIntegerField(null=True, blank=True)
    job = models.ForeignKey(Job, null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
                            db_constraint=False)
    content = models.BinaryField()
    size = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    # Set when a forget or an erasure is requested: the file holds what is being erased, so it
    # is never served again, though the job that deletes it may not have run yet.
    withdrawn_at = models.DateTimeField(null=True, blank=True)

    @property
    def public_id(self) -> str:
        return f"exp_{self.id.hex}"


class IdempotencyRecord(models.Model):
    """The stored answer to an explicit write sent with an Idempotency-Key header."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, db_index=False)  # the primary key leads with it
    scope = models.CharField(max_length=200)
    key = models.CharField(max_length=200)
    request_hash = models.CharField(max_length=64)
    status_code = models.PositiveSmallIntegerField()
    response = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "scope", "key"], name="idempotency_unique"),
        ]


class ConsoleAccount(models.Model):
    """Links a Django user to a tenant, as one subject's owner or as the tenant's admin.
    Identity, not memory: read before a tenant is known, so it carries no row-level policy."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="console")
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE)
    subject_ref = models.CharField(max_length=200, blank=True, default="")
    is_admin = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)


class SignInLink(models.Model):
    """A short-lived, single-use console sign-in link minted by a tenant's backend."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, db_index=False)  # the primary key leads with it
    subject_ref = models.CharField(max_length=200)
    # Unique per tenant here, across tenants in TenantRoute (see ApiKey.prefix).
    token_hash = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "token_hash"], name="signinlink_token_unique_per_tenant"),
        ]


class TenantRoute(models.Model):
    """Which tenant a credential belongs to, for the two lookups made before any tenant is known:
    an API key by its prefix, a console sign-in link by its token's hash. Small, global and
    unique across tenants (what ApiKey and SignInLink can no longer be once every unique key they
    have includes tenant_id), so on Citus it is a reference table: the SECURITY DEFINER lookups
    (migration 0013) read the tenant here, then the credential's row on that tenant's shard.
    Holds nothing secret: a key's prefix is shown in its listing, a link is stored only hashed.
    Written with the credential, in the same transaction (services/tenants.py, signin.py)."""

    class Kind(models.TextChoices):
        API_KEY = "api_key"
        SIGNIN_LINK = "signin_link"

    kind = models.CharField(max_length=12, choices=Kind.choices)
    lookup = models.CharField(max_length=64)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["kind", "lookup"], name="tenant_route_unique")]
