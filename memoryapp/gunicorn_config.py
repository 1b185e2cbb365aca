"""Gunicorn settings for the web process (used by runservice and docker-compose)."""
import os

threads = int(os.environ.get("GUNICORN_THREADS", "4"))
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "60"))
accesslog = None
# A request must never pay for loading the embedding model (~6 s): load it as each worker starts.
def post_worker_init(worker):
    from memoryapp import embeddings

    embeddings.warm_up()
