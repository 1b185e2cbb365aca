"""`manage.py runservice`: the whole service in one command. Migrates, then runs the web
server (gunicorn), a Celery worker and Celery beat; stops all of them, and the embedded
PostgreSQL and Redis it started, on Ctrl-C or SIGTERM."""
import os
import signal
import subprocess
import sys
import time

from django.conf import settings
from django.core.management import BaseCommand, call_command

from memoryapp import embedded


class Command(BaseCommand):
    help = "Run the web server, a Celery worker and beat (on the embedded default unless configured)."

    def add_arguments(self, parser):
        parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
        parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
        parser.add_argument("--web-workers", type=int, default=int(os.environ.get("WEB_CONCURRENCY", "2")))

    def handle(self, *args, port, host, web_workers, **options):
        uses_embedded_db = not os.environ.get("DATABASE_URL")
        uses_embedded_redis = not os.environ.get("REDIS_URL")
        env = {**os.environ, "DATABASE_URL": settings.DATABASE_URL}
        if uses_embedded_redis:
            env["REDIS_URL"] = embedded.start_redis()
        call_command("migrate", verbosity=0)
        bin_dir = os.path.dirname(sys.executable)
        beat_schedule = embedded.DATA_DIR / "celerybeat-schedule"
        commands = {
            "web": [
                os.path.join(bin_dir, "gunicorn"), "memoryapp.wsgi:application",
                "--config", "python:memoryapp.gunicorn_config",
                "--bind", f"{host}:{port}", "--workers", str(web_workers),
            ],
            "worker": [
                os.path.join(bin_dir, "celery"), "-A", "workers.celery", "worker",
                "-Q", "extraction,maintenance,erasure", "--concurrency", "1", "--loglevel", "INFO",
            ],
            "beat": [
                os.path.join(bin_dir, "celery"), "-A", "workers.celery", "beat",
                "--schedule", str(beat_schedule), "--loglevel", "INFO",
            ],
        }
        children = {name: subprocess.Popen(cmd, env=env) for name, cmd in commands.items()}
        stopping = False

        def stop(signum, frame):
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        display_host = "127.0.0.1" if host in ("0.0.0.0", "") else host
        self.stdout.write(self.style.SUCCESS(f"Memory service running at http://{display_host}:{port}/"))
        self.stdout.write(f"  API: http://{display_host}:{port}/api/v1/  docs: http://{display_host}:{port}/api/docs/")
        self.stdout.write("  Ctrl-C stops everything.")
        exit_code = 0
        try:
            while not stopping:
                for name, child in children.items():
                    if child.poll() is not None:
                        self.stderr.write(f"{name} exited with {child.returncode}; stopping the service")
                        stopping, exit_code = True, 1
                time.sleep(0.5)
        finally:
            for child in children.values():
                if child.poll() is None:
                    child.terminate()
            deadline = time.time() + 20
            for child in children.values():
                try:
                    child.wait(timeout=max(deadline - time.time(), 0.1))
                except subprocess.TimeoutExpired:
                    child.kill()
            if uses_embedded_redis:
                embedded.stop_redis()
            if uses_embedded_db:
                from django.db import connections

                connections.close_all()
                embedded.stop_postgres()
            self.stdout.write("Stopped.")
        if exit_code:
            sys.exit(exit_code)
