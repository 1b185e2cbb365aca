"""Mint an API key. The key is shown once, alone on the last line of the output."""
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.utils import timezone

from memoryapp.actors import Actor
from memoryapp.models import SourceKind, Tenant
from memoryapp.services.tenants import api_key_create, tenant_create

SUBJECT_MAX = 200


class Command(BaseCommand):
    help = "Create an API key for a tenant (optionally bound to one subject) and print it once."

    def add_arguments(self, parser):
        parser.add_argument("--tenant", required=True, help="the tenant's slug")
        parser.add_argument("--create-tenant", action="store_true", help="create the tenant if it does not exist")
        parser.add_argument("--subject", default="", help="bind the key to this subject id")
        parser.add_argument("--name", default="", help="a label for the key")
        parser.add_argument(
            "--max-source", default=SourceKind.USER_EXPLICIT, choices=SourceKind.values,
            help="the highest source the key may claim; a write claiming more is refused (default: any)",
        )

    def handle(self, *args, tenant, create_tenant, subject, name, max_source, **options):
        if len(subject) > SUBJECT_MAX:
            raise CommandError(f"--subject is at most {SUBJECT_MAX} characters")
        existing = Tenant.objects.filter(slug=tenant).first()
        if existing is None and not create_tenant:
            raise CommandError(f"No tenant {tenant!r}; pass --create-tenant to create it.")
        actor = Actor("system", "create_api_key")
        # A key needs a name an admin can recognise on the keys page and in the read log.
        name = name.strip() or f"made on the command line, {timezone.now():%Y-%m-%d %H:%M} UTC"
        with transaction.atomic():
            tenant_obj = existing or tenant_create(slug=tenant)
            api_key, raw = api_key_create(tenant=tenant_obj, subject_ref=subject, name=name, actor=actor,
                                          max_source=max_source)
        bound = f", bound to subject {subject!r}" if subject else ""
        if max_source != SourceKind.USER_EXPLICIT:
            bound += f", claiming at most source {max_source!r}"
        self.stdout.write(f"Created key {api_key.prefix} ({api_key.name!r}) for tenant {tenant_obj.slug!r}{bound}. "
                          "It is shown only once:")
        self.stdout.write(raw)
