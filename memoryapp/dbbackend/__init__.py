"""Django's PostgreSQL backend, told that a tenant table's primary key in the database is
(tenant_id, id) while the ORM's is `id` (docs/scaling.md). Settings name it as ENGINE."""
