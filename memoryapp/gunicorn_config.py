"""Gunicorn settings for the web process (used by runservice, docker-compose and bench/api_load.py)."""
import http
import json
import os
import shutil
import tempfile

import gunicorn.util

worker_class = "gthread"
threads = int(os.environ.get("GUNICORN_THREADS", "4"))
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "60"))
accesslog = None
# How long an idle keep-alive connection stays open. Gunicorn's default, 2 s, is shorter than
# the idle expiry of the clients that call us (httpx keeps pooled connections 5 s, urllib3 for
# ever, a proxy in front 60 s): a client that waited a few seconds then reuses a connection the
# server is closing at that moment, and its request is lost with "Server disconnected without
# sending a response" (seen in CI: a mem0 client's call right after waiting for a job). Longer
# than every one of those, the server is never the side that closes first. gthread keeps idle
# connections in its poller, not in a thread, so they cost a file descriptor each.
keepalive = int(os.environ.get("GUNICORN_KEEPALIVE", "75"))
# gunicorn's largest request line (its default is 4094): an over-long address, most often a sign-in
# link pasted together with the text after it, then reaches Django, which answers with a page that
# says what went wrong instead of gunicorn's bare 414. Longer lines still get the 414 below.
limit_request_line = 8190

# One /metrics for every worker (prometheus_client's multiprocess mode): each process writes its
# samples to files in PROMETHEUS_MULTIPROC_DIR and a scrape sums them (api/views/health.py). It
# must be set before a worker imports prometheus_client, so here, in the master. runservice sets
# it for the web server and the Celery worker alike (one /metrics shows both); a gunicorn started
# without it gets a private folder, removed when it exits.
_OWN_METRICS_DIR = None
if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
    _OWN_METRICS_DIR = tempfile.mkdtemp(prefix="memory-metrics-")
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = _OWN_METRICS_DIR


def child_exit(server, worker):
    """A dead worker's counters and histograms stay in the sums (Prometheus expects totals never to
    go back); this only drops what the dead process reported as live."""
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)


def on_exit(server):
    if _OWN_METRICS_DIR:
        shutil.rmtree(_OWN_METRICS_DIR, ignore_errors=True)


def post_worker_init(worker):
    """Load the embedding model as each worker starts (seconds): a request must never pay for it.
    One model thread per worker (embeddings.py reads TORCH_NUM_THREADS for either runtime):
    request threads already run queries in parallel, and several workers each spawning a thread
    per core only fight over the same cores."""
    os.environ.setdefault("TORCH_NUM_THREADS", "1")
    from memoryapp import embeddings, keyroute

    embeddings.warm_up()
    keyroute.warm_up()  # the key descriptions' vectors, so the first search does not embed them


# Gunicorn answers a request it cannot parse (a request line over limit_request_line, a bad header)
# itself, before Django sees it, with an HTML page. The API promises JSON errors only, so its
# error writer is replaced here; workers look it up as `util.write_error` at call time.
_GUNICORN_ERROR_CODES = {
    400: "bad_request", 403: "forbidden", 414: "uri_too_long", 417: "expectation_failed",
    431: "headers_too_large", 500: "internal_error", 501: "not_implemented",
}


def write_json_error(sock, status_int, reason, mesg):
    # Imported here, in the worker, where Django is already set up; the master never needs it.
    from api.errors import error_body

    code = _GUNICORN_ERROR_CODES.get(status_int, "bad_request")
    body = json.dumps(error_body(code, mesg or reason)).encode()
    try:  # gunicorn's own reason stays "Bad Request" for some other statuses (500, 501)
        phrase = http.HTTPStatus(status_int).phrase
    except ValueError:
        phrase = reason
    head = (
        f"HTTP/1.1 {status_int} {phrase}\r\nConnection: close\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    gunicorn.util.write_nonblock(sock, head.encode("latin-1") + body)


gunicorn.util.write_error = write_json_error
