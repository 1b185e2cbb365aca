from django.apps import AppConfig


class MemoryAppConfig(AppConfig):
    name = "memoryapp"
    verbose_name = "Memory"

    def ready(self) -> None:
        from django.db.models.signals import post_migrate

        from memoryapp import dbroles

        post_migrate.connect(dbroles.grant_app_role, sender=self)
