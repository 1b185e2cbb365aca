"""Insert many rows in one statement of one placeholder per column.

Django's bulk_create sends VALUES (%s, …), (%s, …) for a model with a column type it cannot
unnest (here the vectors): 500 episodes made a statement of ~12,000 placeholders that Django
assembled and psycopg split and quoted one by one, on the client, for each chunk of a job.
Django itself inserts through UNNEST of one array per column when every column's type is a
plain one; this does the same for any column, passing each as text and casting it back in SQL.
"""
from django.db import connections, router


def text_array(values: list) -> str:
    """A PostgreSQL text[] literal: one string for psycopg to quote, where a list is dumped
    element by element (a regular expression per element; ~2 MB of vector text per 500 rows)."""
    return "{" + ",".join(
        "NULL" if v is None else '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"' for v in values) + "}"


def bulk_insert(model, objs: list) -> list:
    """Insert `objs` (new instances with their primary keys set, as UUID keys are) as
    bulk_create would: field defaults and pre_save (auto_now_add) applied, generated columns
    left to the database. Returns `objs`, marked as saved."""
    if not objs:
        return objs
    using = router.db_for_write(model)
    connection = connections[using]
    meta = model._meta
    fields = [f for f in meta.concrete_fields if not f.generated]
    columns, selects, arrays = [], [], []
    for i, field in enumerate(fields):
        db_type = (field.target_field if field.is_relation else field).db_type(connection)
        values = [field.get_db_prep_save(field.pre_save(obj, add=True), connection) for obj in objs]
        if field.get_internal_type() in connection.data_types:
            placeholder = "%%s::%s[]" % db_type.split("(")[0]
        else:
            # A type Django would not unnest: its text, cast back per row.
            placeholder, db_type = "%s::text[]", db_type
            values = text_array([None if v is None else str(v) for v in values])
        columns.append(connection.ops.quote_name(field.column))
        selects.append(f"c{i}::{db_type}" if placeholder == "%s::text[]" else f"c{i}")
        arrays.append((placeholder, values))
    sql = "INSERT INTO {table} ({columns}) SELECT {selects} FROM UNNEST({arrays}) AS u({names})".format(
        table=connection.ops.quote_name(meta.db_table), columns=", ".join(columns), selects=", ".join(selects),
        arrays=", ".join(p for p, _ in arrays), names=", ".join(f"c{i}" for i in range(len(fields))))
    with connection.cursor() as cursor:
        cursor.execute(sql, [values for _, values in arrays])
    for obj in objs:
        obj._state.adding = False
        obj._state.db = using
    return objs
