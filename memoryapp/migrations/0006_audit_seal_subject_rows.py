"""The audit chain is sealed after commit and covers every column; rows name the Subject row
they are about; proposals name what they would replace; quarantined episodes get a status.

- AuditEntry: `seq`/`prev_hash`/`entry_hash` are set by the sealer after the writing
  transaction commits (services/audit.py), so they may be empty until then; `hash_version` says
  which columns the hash covers (1 for the entries already here, 2 for new ones);
  `subject_row_id` ties an entry to one person, not to an id string that erasure frees for
  reuse. Entries, jobs and export files already stored get the Subject row that holds their
  subject id now, if they were written after it was created (entries of an erased earlier
  holder of the id predate it and stay unattached).
- Payloads already blanked by erasures are recorded by one chained `audit_redacted` entry per
  tenant, so the verification can tell them from an edit from now on.
- A trigger keeps sealed entries' place in the chain and lets payloads only be blanked, for
  every role; the application's role may now update the sealing columns (dbroles.py).
- Episodes of events still in quarantine become `quarantined`: no agent reads them until an
  admin releases the event.

Cost on a large deployment: the backfills rewrite every audit, job and export row once, and
the new memory column's foreign key is validated with a scan of the memory table (both under
locks that block writes to those tables): minutes at millions of rows, so run it in a window.
"""
import hashlib
import json

import django.db.models.deletion
from django.db import migrations, models
from django.utils import timezone

BACKFILL_SUBJECT_ROWS = """
UPDATE memoryapp_auditentry a SET subject_row_id = s.id FROM memoryapp_subject s
 WHERE s.tenant_id = a.tenant_id AND s.external_id = a.subject_ref AND a.subject_ref <> ''
   AND a.created_at >= s.created_at;
UPDATE memoryapp_job j SET subject_row_id = s.id FROM memoryapp_subject s
 WHERE s.tenant_id = j.tenant_id AND s.external_id = j.subject_ref AND j.subject_ref <> ''
   AND j.created_at >= s.created_at;
UPDATE memoryapp_exportfile e SET subject_row_id = s.id FROM memoryapp_subject s
 WHERE s.tenant_id = e.tenant_id AND s.external_id = e.subject_ref AND e.created_at >= s.created_at;
"""

QUARANTINE_EPISODES = """
UPDATE memoryapp_memory m SET status = 'quarantined' FROM memoryapp_event e
 WHERE e.id = m.source_event_id AND e.tenant_id = m.tenant_id AND e.quarantined
   AND m.memory_type = 'episodic' AND m.status = 'active';
"""

APPEND_ONLY = """
CREATE OR REPLACE FUNCTION memory_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.seq IS NOT NULL AND (NEW.seq IS DISTINCT FROM OLD.seq OR NEW.prev_hash IS DISTINCT FROM OLD.prev_hash
                                OR NEW.entry_hash IS DISTINCT FROM OLD.entry_hash) THEN
        RAISE EXCEPTION 'a sealed audit entry keeps its place in the chain' USING ERRCODE = '42501';
    END IF;
    IF (NEW.before IS NOT NULL AND NEW.before IS DISTINCT FROM OLD.before)
       OR (NEW.after IS NOT NULL AND NEW.after IS DISTINCT FROM OLD.after) THEN
        RAISE EXCEPTION 'an audit payload can only be blanked' USING ERRCODE = '42501';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER memory_audit_append_only BEFORE UPDATE ON memoryapp_auditentry
    FOR EACH ROW EXECUTE FUNCTION memory_audit_append_only();
"""

DROP_APPEND_ONLY = """
DROP TRIGGER IF EXISTS memory_audit_append_only ON memoryapp_auditentry;
DROP FUNCTION IF EXISTS memory_audit_append_only();
"""


# Frozen copies of services/audit.py's version-2 hashing as of this migration, so that a later
# change to that module cannot change what this migration writes.
def canonical_json(value) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def payload_digest(before, after) -> str:
    return hashlib.sha256(canonical_json({"before": before, "after": after}).encode()).hexdigest()


def id_ranges(ids) -> list[list[int]]:
    ranges: list[list[int]] = []
    for value in sorted(set(int(i) for i in ids)):
        if ranges and value == ranges[-1][1] + 1:
            ranges[-1][1] = value
        else:
            ranges.append([value, value])
    return ranges


def _hash_v2(entry, prev_hash: str) -> str:
    parts = [
        prev_hash, "v2", str(entry.id), str(entry.tenant_id), str(entry.seq), entry.created_at.isoformat(),
        entry.actor_kind, entry.actor_id, entry.action, entry.subject_ref,
        "" if entry.subject_row_id is None else str(entry.subject_row_id),
        entry.memory_id.hex if entry.memory_id else "", entry.target, canonical_json(entry.details),
        entry.payload_digest,
    ]
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()


def record_legacy_redactions(apps, schema_editor):
    """One chained `audit_redacted` entry per tenant naming the payloads blanked so far."""
    db = schema_editor.connection.alias
    AuditEntry = apps.get_model("memoryapp", "AuditEntry")
    AuditChain = apps.get_model("memoryapp", "AuditChain")
    tenant_ids = (AuditEntry.objects.using(db).filter(redacted_at__isnull=False)
                  .values_list("tenant_id", flat=True).distinct())
    for tenant_id in sorted(set(tenant_ids)):
        ids = list(AuditEntry.objects.using(db).filter(tenant_id=tenant_id, redacted_at__isnull=False)
                   .values_list("pk", flat=True))
        chain = AuditChain.objects.using(db).select_for_update().get(tenant_id=tenant_id)
        details = json.loads(canonical_json({
            "reason": "payloads blanked by erasures before the chain recorded redactions", "count": len(ids),
            "entry_ranges": id_ranges(ids),
        }))
        entry = AuditEntry.objects.using(db).create(
            tenant_id=tenant_id, seq=chain.seq + 1, actor_kind="system", actor_id="migration-0006",
            action="audit_redacted", details=details, payload_digest=payload_digest(None, None),
            prev_hash=chain.head_hash, hash_version=2, created_at=timezone.now(),
        )
        entry.entry_hash = _hash_v2(entry, chain.head_hash)
        entry.save(update_fields=["entry_hash"])
        chain.seq, chain.head_hash = entry.seq, entry.entry_hash
        chain.save(update_fields=["seq", "head_hash"])


class Migration(migrations.Migration):

    dependencies = [
        ('memoryapp', '0005_memory_has_time_reference'),
    ]

    operations = [
        migrations.AddField(
            model_name='auditentry',
            name='hash_version',
            field=models.PositiveSmallIntegerField(default=1),
        ),
        migrations.AddField(
            model_name='auditentry',
            name='subject_row_id',
            field=models.BigIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='exportfile',
            name='subject_row_id',
            field=models.BigIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='exportfile',
            name='withdrawn_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='job',
            name='subject_row_id',
            field=models.BigIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='memory',
            name='proposal_for',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='proposals', to='memoryapp.memory'),
        ),
        migrations.AlterField(
            model_name='auditentry',
            name='entry_hash',
            field=models.CharField(blank=True, default='', max_length=64),
        ),
        migrations.AlterField(
            model_name='auditentry',
            name='prev_hash',
            field=models.CharField(blank=True, default='', max_length=64),
        ),
        migrations.AlterField(
            model_name='auditentry',
            name='seq',
            field=models.BigIntegerField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name='memory',
            name='status',
            field=models.CharField(choices=[('active', 'Active'), ('superseded', 'Superseded'), ('expired', 'Expired'), ('pending_approval', 'Pending Approval'), ('rejected', 'Rejected'), ('quarantined', 'Quarantined')], default='active', max_length=20),
        ),
        migrations.AddIndex(
            model_name='auditentry',
            index=models.Index(fields=['tenant', 'subject_row_id', 'seq'], name='audit_subject_row_idx'),
        ),
        migrations.AddIndex(
            model_name='auditentry',
            index=models.Index(condition=models.Q(('seq__isnull', True)), fields=['tenant', 'id'], name='audit_unsealed_idx'),
        ),
        migrations.RunSQL(BACKFILL_SUBJECT_ROWS, migrations.RunSQL.noop),
        migrations.RunSQL(QUARANTINE_EPISODES, migrations.RunSQL.noop),
        migrations.RunPython(record_legacy_redactions, migrations.RunPython.noop),
        migrations.RunSQL(APPEND_ONLY, DROP_APPEND_ONLY),
    ]
