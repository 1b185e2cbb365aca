"""What one extraction job of a single event costs the worker: statements, time in them, wall
and CPU time per job, in this process, on its own database.

    python -m memoryapp.embedded exec -- .venv/bin/python bench/job_cost.py [--jobs 60] [--code DIR]

Under light load every appended event is a job of its own (bench/api_load.py's events at four
clients), so the fixed cost of a job (claiming it, holding its subject, claiming its events,
reporting progress, finishing) is most of the worker's work per event; bench/ingest.py measures
the other end, large jobs. Each job appends one chat message of one of four subjects and runs it
as a worker does (jobs.job_run with the real runner); the first 20 warm caches and are not
counted. `--code DIR` imports another checkout (the code before a change) with this one's
virtualenv, so two versions are compared on one machine in one hour.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

QUEUE = "bench_job_cost"
MESSAGES = ["I moved to Porto last month.", "My sister Ana is a doctor.", "I prefer tea in the morning.",
            "what's the weather like?", "I started learning the cello.", "We adopted a dog called Biscuit."]
WARM = 20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=60)
    parser.add_argument("--code", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser.add_argument("--database", default="bench_job_cost")
    parser.add_argument("--show", action="store_true", help="print the last job's statements, abridged")
    args = parser.parse_args()
    sys.path.insert(0, os.path.abspath(args.code))

    from bench import benchdb
    benchdb.django_setup()
    from django.db import connection, transaction

    from memoryapp import embeddings
    from memoryapp.actors import Actor
    from memoryapp.services.events import EventInput, event_append
    from memoryapp.services.jobs import job_run
    from memoryapp.services.tenants import tenant_create
    from workers.tasks import JOB_RUNNERS, resolve

    benchdb.publish_jobs_to(QUEUE)
    benchdb.use(args.database, create=True)
    try:
        embeddings.warm_up()
        with transaction.atomic():
            tenant = tenant_create(slug=f"job-cost-{time.time_ns()}")
        actor = Actor("system", "bench")
        runners = {"extraction": resolve(JOB_RUNNERS["extraction"])}
        statements: list = []  # the time of each statement of the job being run
        texts: list = []  # ... and its text, abridged (--show)

        def count(execute, sql, params, many, context):
            started = time.perf_counter()
            try:
                return execute(sql, params, many, context)
            finally:
                statements.append(time.perf_counter() - started)
                texts.append(" ".join(sql.split())[:110])

        walls, cpus, counts, in_statements = [], [], [], []
        for i in range(WARM + args.jobs):
            _, job = event_append(tenant=tenant, subject_ref=f"subject-{i % 4}",
                                  events=[EventInput(f"event-{i}", "user", MESSAGES[i % len(MESSAGES)])], actor=actor)
            statements.clear()
            texts.clear()
            wall, cpu = time.perf_counter(), time.process_time()
            with connection.execute_wrapper(count):
                job_run(tenant_id=tenant.pk, job_id=str(job.id), runners=runners)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            if i >= WARM:
                walls.append(1000 * wall)
                cpus.append(1000 * cpu)
                counts.append(len(statements))
                in_statements.append(1000 * sum(statements))
        print(f"code: {os.path.abspath(args.code)}; {args.jobs} jobs of one event each, medians per job")
        print(f"  wall {statistics.median(walls):.1f} ms, CPU (this process) {statistics.median(cpus):.1f} ms, "
              f"{statistics.median(counts):.0f} statements, {statistics.median(in_statements):.1f} ms waiting on them")
        if args.show:
            print("\n".join(f"  {n:2d}. {text}" for n, text in enumerate(texts, 1)))
    finally:
        benchdb.drop(args.database)
        benchdb.delete_queue(QUEUE)


if __name__ == "__main__":
    main()
