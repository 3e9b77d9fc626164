"""The test database, migrated once per run and copied to every pytest-xdist worker.

pytest-django runs every migration in every worker; on a busy 2-core machine four workers
each spend about a minute migrating before their first test. Here the first worker to need a
database migrates a template under a file lock shared by the run's workers; every worker then
takes a copy of it, as Django's own parallel runner does:

- SQLite: the template is a file in the run's temporary folder; each worker loads it into its
  own in-memory database (`file:memorydb_default_gwN?mode=memory&cache=shared`), so the tests
  run on memory as before and threads (the live server) share it.
- PostgreSQL: the template is `test_<name>`, each worker's database `test_<name>_gwN` is
  `CREATE DATABASE … TEMPLATE test_<name>` (Django's `clone_test_db`). Each worker drops its
  copy at the end; the controller drops the template (`drop_template`).

Without xdist (`-p no:xdist`, `-n 0`) or with `--reuse-db`, pytest-django's own set-up runs.
"""

import fcntl
import sqlite3
from contextlib import contextmanager
from pathlib import Path

import psycopg
from django.conf import settings
from django.db import connections
from psycopg import sql

TEMPLATE_DONE = "test-database-template.done"


@contextmanager
def locked(path: Path):
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _set_name(connection, name: str) -> None:
    connection.settings_dict["NAME"] = name
    settings.DATABASES[connection.alias]["NAME"] = name


def _template_name(connection, shared: Path) -> str:
    if connection.vendor == "sqlite":
        return str(shared / "test-database-template.sqlite3")
    return f"test_{connection.settings_dict['NAME']}"


def set_up(*, worker: str, shared: Path):
    """Give this worker its copy of the run's migrated template; return what tear_down needs."""
    connection = connections["default"]
    original = connection.settings_dict["NAME"]
    template = _template_name(connection, shared)
    with locked(shared / "test-database.lock"):
        if not (shared / TEMPLATE_DONE).exists():
            connection.settings_dict["TEST"]["NAME"] = template
            connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
            connection.close()
            (shared / TEMPLATE_DONE).write_text(template)
        _set_name(connection, template)
        if connection.vendor == "sqlite":
            _load_into_memory(connection, template, worker)
        else:
            connection.creation.clone_test_db(suffix=worker, verbosity=0)
            _set_name(connection, connection.creation.get_test_db_clone_settings(worker)["NAME"])
            connection.close()
    return original


def _load_into_memory(connection, template: str, worker: str) -> None:
    """As Django's SQLite set-up of a spawned worker: the file's pages copied into this
    worker's shared-cache memory database, which lives while the connection is open."""
    memory = f"file:memorydb_{connection.alias}_{worker}?mode=memory&cache=shared"
    source = sqlite3.connect(f"file:{template}?mode=ro", uri=True)
    target = sqlite3.connect(memory, uri=True)
    source.backup(target)
    source.close()
    _set_name(connection, memory)
    connection.connect()  # opened before the copy's handle closes, so the memory stays
    target.close()


def tear_down(*, original: str) -> None:
    connection = connections["default"]
    if connection.vendor == "sqlite":
        return  # an in-memory database goes with its process
    copy = connection.settings_dict["NAME"]
    connection.close()
    # WITH (FORCE): a thread of a race test may still hold a connection to the copy.
    _drop_postgres_database(copy)
    _set_name(connection, original)


def drop_template(shared: Path) -> None:
    """At the end of the run (controller): drop the PostgreSQL template the workers made.
    The controller never opened Django's connection (and pytest-django blocks it there)."""
    done = shared / TEMPLATE_DONE
    if not done.exists():
        return
    if settings.DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
        _drop_postgres_database(done.read_text())
    done.unlink()


def _drop_postgres_database(name: str) -> None:
    """One psycopg connection to the server's `postgres` database, outside Django's."""
    database = settings.DATABASES["default"]
    with psycopg.connect(
        host=database["HOST"],
        port=database["PORT"] or 5432,
        user=database["USER"],
        password=database["PASSWORD"] or None,
        dbname="postgres",
        autocommit=True,
    ) as server:
        server.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )
