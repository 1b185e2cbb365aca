"""Makes this checkout's `memory_client` (clients/python) the one the door tests import. `make
install` installs it editable into .venv anyway; putting the tree first also holds when the venv
is shared with another checkout (its editable install would point there) or not yet set up."""
import sys
from pathlib import Path

CLIENT_ROOT = str(Path(__file__).resolve().parents[2] / "clients" / "python")
if CLIENT_ROOT not in sys.path:
    sys.path.insert(0, CLIENT_ROOT)


def wait_until_jobs_settle(timeout: float = 60) -> None:
    """Until no job is queued or running (read as the owner role, across tenants, on a connection
    of its own), so that the test's table flush does not meet a worker still writing (a deadlock
    on TRUNCATE)."""
    import time

    import psycopg

    from tests.workers.conftest import _database_url

    deadline = time.monotonic() + timeout
    with psycopg.connect(_database_url(), autocommit=True) as connection:
        while time.monotonic() < deadline:
            row = connection.execute(
                "SELECT count(*) FROM memoryapp_job WHERE status IN ('queued', 'running')").fetchone()
            if row[0] == 0:
                break
            time.sleep(0.1)
    time.sleep(0.3)  # the task's last statements after it marked the job finished
