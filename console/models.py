"""The console's own table: failed sign-ins, shared by every web process so the lockout holds
however many gunicorn workers answer. Not tenant data (a sign-in happens before any tenant is
known), like ConsoleAccount and Django's auth tables, so it has no row-level policy; the
application role gets its privileges from memoryapp.dbroles.grant_app_role like every table."""
from django.db import models


class LoginFailure(models.Model):
    # sha256 of "username|address": the table never holds a username or an address.
    key = models.CharField(max_length=64, primary_key=True)
    failures = models.PositiveIntegerField(default=0)
    window_started_at = models.DateTimeField(db_index=True)
