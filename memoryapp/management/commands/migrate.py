"""`migrate` runs as the schema's owner by default: the application's own role may not create
or alter tables (that is what keeps row-level security binding on it)."""
from django.core.management.commands.migrate import Command as DjangoMigrate


class Command(DjangoMigrate):
    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.set_defaults(database="owner")
