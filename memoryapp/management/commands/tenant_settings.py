"""Show or change a tenant's write-policy settings (issue 15)."""
from django.core.management.base import BaseCommand, CommandError

from memoryapp.actors import Actor
from memoryapp.models import Tenant
from memoryapp.services.tenants import tenant_settings_update

ON_OFF = {"on": True, "off": False}


class Command(BaseCommand):
    help = "Show a tenant's settings, or change them: --accept-inferences on|off."

    def add_arguments(self, parser):
        parser.add_argument("--tenant", required=True, help="the tenant's slug")
        parser.add_argument(
            "--accept-inferences", choices=sorted(ON_OFF),
            help="on: what an assistant or a tool infers is a current fact at once; off (the default): it waits "
                 "as a candidate until the person confirms it",
        )

    def handle(self, *args, tenant, accept_inferences, **options):
        found = Tenant.objects.filter(slug=tenant).first()
        if found is None:
            raise CommandError(f"No tenant {tenant!r}.")
        if accept_inferences is not None:
            found = tenant_settings_update(tenant=found, accept_inferences=ON_OFF[accept_inferences],
                                           actor=Actor("system", "tenant_settings"))
        state = "on" if found.accept_inferences else "off"
        self.stdout.write(f"Tenant {found.slug!r}: accept-inferences {state}")
