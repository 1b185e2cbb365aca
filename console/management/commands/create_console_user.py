"""Create a console account: a tenant admin, or the owner of one subject's memories.

    manage.py create_console_user --tenant SLUG (--subject ID | --admin) --email E [--password P]

Without --password it prompts (twice) on a terminal, or generates one and prints it."""
import getpass
import secrets
import sys

from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from memoryapp.actors import Actor
from memoryapp.errors import ApplicationError
from memoryapp.models import Tenant
from memoryapp.services.signin import console_account_create


class Command(BaseCommand):
    help = "Create a console user for a tenant: its admin (--admin) or one subject's owner (--subject)."

    def add_arguments(self, parser):
        parser.add_argument("--tenant", required=True)
        who = parser.add_mutually_exclusive_group(required=True)
        who.add_argument("--subject")
        who.add_argument("--admin", action="store_true")
        parser.add_argument("--email", required=True)
        parser.add_argument("--password")

    def handle(self, *args, tenant, subject, admin, email, password, **options):
        tenant_obj = Tenant.objects.filter(slug=tenant).first()
        if tenant_obj is None:
            raise CommandError(f"No tenant {tenant!r}.")
        generated = False
        if password is None:
            if sys.stdin.isatty():
                password = getpass.getpass("Password: ")
                if password != getpass.getpass("Password (again): "):
                    raise CommandError("The passwords differ.")
            else:
                password, generated = secrets.token_urlsafe(18), True
        try:
            validate_password(password)
        except ValidationError as error:
            raise CommandError(" ".join(error.messages))
        try:
            console_account_create(
                tenant=tenant_obj, email=email, password=password, subject_ref=subject or "", is_admin=admin,
                actor=Actor("system", "create_console_user"),
            )
        except ApplicationError as error:
            raise CommandError(error.message)
        role = "admin" if admin else f"owner of {subject}"
        self.stdout.write(f"Created {email} ({role}) in tenant {tenant}.")
        if generated:
            self.stdout.write(f"Password: {password}")
