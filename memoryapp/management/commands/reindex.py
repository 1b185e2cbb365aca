"""`python manage.py reindex [--tenant SLUG] [--batch-size N]`: queue a re-embedding job for every
tenant (or one) that has memories embedded by another model than the current one. Run it after
deploying a new EMBEDDING_VERSION; the jobs are resumable, so running it twice is harmless."""
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from memoryapp import embeddings
from memoryapp.actors import Actor
from memoryapp.models import Memory, Tenant
from memoryapp.services.reindex import BATCH_SIZE, reindex_request
from memoryapp.tenancy import tenant_activate


class Command(BaseCommand):
    help = "Queue re-embedding jobs for memories embedded by an older model."

    def add_arguments(self, parser):
        parser.add_argument("--tenant", help="only this tenant's slug")
        parser.add_argument("--batch-size", type=int, default=BATCH_SIZE)

    def handle(self, *args, tenant=None, batch_size=BATCH_SIZE, **options):
        if batch_size < 1:
            raise CommandError("--batch-size must be at least 1")
        tenants = Tenant.objects.all()
        if tenant:
            tenants = tenants.filter(slug=tenant)
            if not tenants.exists():
                raise CommandError(f"no tenant {tenant!r}")
        for t in tenants:
            with transaction.atomic():
                tenant_activate(tenant=t)
                stale = Memory.objects.filter(tenant=t).exclude(embedding_version=embeddings.EMBEDDING_VERSION).exists()
            if stale:
                job = reindex_request(tenant=t, actor=Actor("system", "reindex-command"), batch_size=batch_size)
                self.stdout.write(f"{t.slug}: {job.public_id} ({job.progress_total} memories)")
            else:
                self.stdout.write(f"{t.slug}: up to date")
