"""PostgreSQL, with one feature corrected for the tenant tables.

Django shortens `GROUP BY` to a model's primary key when it selects the whole row, relying on
PostgreSQL's rule that every column depends on the primary key. In the database a tenant table's
primary key is (tenant_id, id) (migration 0015), not the ORM's `id`, so PostgreSQL refuses
`GROUP BY t.id` with other columns of t selected ("must appear in the GROUP BY clause"). For those
models Django groups by every selected column instead: the same rows, a longer GROUP BY.
"""
from django.db.backends.postgresql import base, features


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
