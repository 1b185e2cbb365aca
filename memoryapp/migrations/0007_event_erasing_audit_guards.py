"""Events a forget is erasing are marked; the audit chain's head and new entries are guarded.

- Event.erasing: a forget marks the messages it takes, so no reader shows them while the
  deletion job waits (the column has a constant default: no table rewrite).
- The chain head only moves forward and is never deleted, and an entry is always inserted
  unsealed (the sealer alone gives it its place): the application's role could otherwise move
  the head back over an edited tail, or insert an entry already "sealed", and hide it from the
  verification. Like 0006's trigger, these apply to every role; an owner can drop them, which
  the verification (a walk of the chain against its head) still catches.
"""
from django.db import migrations, models

GUARDS = """
CREATE OR REPLACE FUNCTION memory_audit_chain_forward() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        RAISE EXCEPTION 'an audit chain is never deleted' USING ERRCODE = '42501';
    END IF;
    IF NEW.seq < OLD.seq OR (NEW.seq = OLD.seq AND NEW.head_hash IS DISTINCT FROM OLD.head_hash)
       OR NEW.tenant_id IS DISTINCT FROM OLD.tenant_id THEN
        RAISE EXCEPTION 'an audit chain only grows' USING ERRCODE = '42501';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER memory_audit_chain_forward BEFORE UPDATE OR DELETE ON memoryapp_auditchain
    FOR EACH ROW EXECUTE FUNCTION memory_audit_chain_forward();

CREATE OR REPLACE FUNCTION memory_audit_inserted_unsealed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.seq IS NOT NULL OR NEW.prev_hash <> '' OR NEW.entry_hash <> '' THEN
        RAISE EXCEPTION 'an audit entry is inserted unsealed; the sealer gives it its place'
            USING ERRCODE = '42501';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER memory_audit_inserted_unsealed BEFORE INSERT ON memoryapp_auditentry
    FOR EACH ROW EXECUTE FUNCTION memory_audit_inserted_unsealed();
"""

DROP_GUARDS = """
DROP TRIGGER IF EXISTS memory_audit_chain_forward ON memoryapp_auditchain;
DROP FUNCTION IF EXISTS memory_audit_chain_forward();
DROP TRIGGER IF EXISTS memory_audit_inserted_unsealed ON memoryapp_auditentry;
DROP FUNCTION IF EXISTS memory_audit_inserted_unsealed();
"""


class Migration(migrations.Migration):

    dependencies = [
        ('memoryapp', '0006_audit_seal_subject_rows'),
    ]

    operations = [
        migrations.AddField(
            model_name='event',
            name='erasing',
            field=models.BooleanField(default=False),
        ),
        migrations.RunSQL(GUARDS, DROP_GUARDS),
    ]
