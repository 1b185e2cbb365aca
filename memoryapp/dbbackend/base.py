"""PostgreSQL, with one feature corrected for the tenant tables.

Django shortens `GROUP BY` to a model's primary key when it selects the whole row, relying on
PostgreSQL's rule that every column depends on the primary key. In the database a tenant table's
primary key is (tenant_id, id) (migration 0015), not the ORM's `id`, so PostgreSQL refuses
`GROUP BY t.id` with other columns of t selected ("must appear in the GROUP BY clause"). For those
models Django groups by every selected column instead: the same rows, a longer GROUP BY.

And one driver limit raised: psycopg remembers where a statement's `%(name)s` placeholders are
only for statements of at most 4,096 bytes, and splits a longer one again on every
execution. The search's ranking statement is ~8,100 bytes (its comments say why each part is there),
and re-splitting it cost ~0.9 ms of Python per search (cProfile, bench/request_cost.py). The
cache stays bounded (128 statements, least recently used first out); only the length gate moves.
"""
from django.db.backends.postgresql import base, features
from psycopg import _queries

STATEMENT_CACHE_LENGTH = 16_384
# (A private constant: should a later psycopg drop it, this sets an unread name, nothing breaks,
# and tests/memoryapp/test_statement_cache.py fails to say the saving is gone.)
_queries.MAX_CACHED_STATEMENT_LENGTH = max(getattr(_queries, "MAX_CACHED_STATEMENT_LENGTH", 0), STATEMENT_CACHE_LENGTH)


def _database_pk_differs(model) -> bool:
    from memoryapp import citus

    meta = model._meta
    return (
        meta.db_table not in citus.ROUTING_TABLES
        and meta.pk.column != citus.DISTRIBUTION_COLUMN
        and any(f.column == citus.DISTRIBUTION_COLUMN for f in meta.concrete_fields)
    )


class DatabaseFeatures(features.DatabaseFeatures):
    def allows_group_by_selected_pks_on_model(self, model):
        if _database_pk_differs(model):
            return False
        return super().allows_group_by_selected_pks_on_model(model)


class DatabaseWrapper(base.DatabaseWrapper):
    features_class = DatabaseFeatures
