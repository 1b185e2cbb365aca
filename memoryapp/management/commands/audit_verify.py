"""`python manage.py audit_verify --tenant SLUG` (or `--all`): seal what is pending, walk the
tenant's audit chain and say what was checked. Exits 1 when a chain does not verify, so cron and
monitoring can alert on it; 2 for a usage error (unknown tenant)."""
import sys

from django.core.management.base import BaseCommand, CommandError

from memoryapp.models import Tenant
from memoryapp.services.audit import audit_verify

MAX_PROBLEMS_SHOWN = 50


class Command(BaseCommand):
    help = "Verify a tenant's hash-chained audit log; exit non-zero when it does not verify."

    def add_arguments(self, parser):
        which = parser.add_mutually_exclusive_group(required=True)
        which.add_argument("--tenant", help="the tenant's slug")
        which.add_argument("--all", action="store_true", help="every tenant")

    def handle(self, *args, tenant=None, all=False, **options):
        tenants = list(Tenant.objects.order_by("slug")) if all else list(Tenant.objects.filter(slug=tenant))
        if not tenants:
            raise CommandError(f"no tenant {tenant!r}", returncode=2)
        failed = False
        for t in tenants:
            result = audit_verify(tenant=t)
            self.stdout.write(
                f"{t.slug}: checked {result.checked} entries ({result.legacy} from before every column was "
                f"hashed), {result.redacted} redacted payloads each named by a chained redaction entry"
            )
            if result.ok:
                self.stdout.write(f"{t.slug}: the chain verifies")
                continue
            failed = True
            self.stdout.write(f"{t.slug}: the chain does NOT verify ({len(result.problems)} problems)")
            for problem in result.problems[:MAX_PROBLEMS_SHOWN]:
                self.stdout.write(f"  - {problem}")
            if len(result.problems) > MAX_PROBLEMS_SHOWN:
                self.stdout.write(f"  ... and {len(result.problems) - MAX_PROBLEMS_SHOWN} more")
        if failed:
            sys.exit(1)
