"""gunicorn hooks for the load benchmark: every worker loads the embedding model before it
accepts a request, so no measured request pays the seconds that loading takes."""


def post_worker_init(worker):
    from memoryapp.embeddings import warm_up

    warm_up()
