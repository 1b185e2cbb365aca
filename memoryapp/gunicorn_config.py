"""Gunicorn settings for the web process (used by runservice, docker-compose and bench/api_load.py)."""
import os

worker_class = "gthread"
threads = int(os.environ.get("GUNICORN_THREADS", "4"))
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "60"))
accesslog = None


def post_worker_init(worker):
    """Load the embedding model as each worker starts (~6 s): a request must never pay for it.
    One torch thread per worker: request threads already run queries in parallel, and several
    workers each spawning a thread per core only fight over the same cores."""
    import torch

    torch.set_num_threads(int(os.environ.get("TORCH_NUM_THREADS", "1")))
    from memoryapp import embeddings, keyroute

    embeddings.warm_up()
    keyroute.warm_up()  # the key descriptions' vectors, so the first search does not embed them
