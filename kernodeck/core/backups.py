"""Backups of the database: SQLite's online backup API, or pg_dump/pg_restore.

The task queue and the cache hold nothing that a restart cannot rebuild, so the database
is the whole state of a Kernodeck installation (plus `KERNODECK_FIELD_KEYS` and the
wallets' public keys, which live in the environment).
"""

import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

from django.db import connection


class BackupError(Exception):
    """A backup or restore that could not run; the message says why."""


def _postgres_command(program: str) -> tuple[list[str], dict[str, str]]:
    """The client program with the connection arguments of the default database."""
    path = shutil.which(program)
    if path is None:
        raise BackupError(
            f"{program} was not found: install the PostgreSQL client tools "
            "(Debian: apt-get install postgresql-client) matching the server's version."
        )
    params = connection.settings_dict
    args = [path, "--no-owner", "--no-privileges"]
    if params.get("HOST"):
        args += ["--host", str(params["HOST"])]
    if params.get("PORT"):
        args += ["--port", str(params["PORT"])]
    if params.get("USER"):
        args += ["--username", str(params["USER"])]
    args += ["--dbname", str(params["NAME"])]
    env = dict(os.environ)
    if params.get("PASSWORD"):
        env["PGPASSWORD"] = str(params["PASSWORD"])
    return args, env


def _run(args: list[str], env: dict[str, str]) -> None:
    result = subprocess.run(args, env=env, capture_output=True, text=True, check=False)  # noqa: S603
    if result.returncode != 0:
        raise BackupError(result.stderr.strip() or f"{args[0]} exited with {result.returncode}")


def database_backup(*, destination: Path) -> Path:
    """Write a consistent copy of the live database to `destination`.

    SQLite: the online backup API copies pages while other processes keep writing (WAL).
    PostgreSQL: `pg_dump` in its custom format, one snapshot.
    """
    destination = Path(destination)
    destination.parent.mkdir(parents=True, exist_ok=True)
    connection.ensure_connection()
    if connection.vendor == "sqlite":
        target = sqlite3.connect(destination)
        try:
            connection.connection.backup(target)
        finally:
            target.close()
    elif connection.vendor == "postgresql":
        args, env = _postgres_command("pg_dump")
        _run([*args, "--format=custom", "--file", str(destination)], env)
    else:  # pragma: no cover - only the two supported databases exist
        raise BackupError(f"Backups are not supported on {connection.vendor}.")
    return destination


def database_restore(*, source: Path) -> None:
    """Replace the live database's content with a backup made by `database_backup`.

    Run it with web and workers stopped: every row is replaced in one step.
    """
    source = Path(source)
    if not source.is_file():
        raise BackupError(f"No backup file at {source}.")
    connection.ensure_connection()
    if connection.vendor == "sqlite":
        try:
            backup = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
            backup.execute("PRAGMA schema_version").fetchone()
        except sqlite3.DatabaseError as exc:
            raise BackupError(f"{source} is not a SQLite backup: {exc}") from None
        try:
            backup.backup(connection.connection)
        finally:
            backup.close()
    elif connection.vendor == "postgresql":
        args, env = _postgres_command("pg_restore")
        connection.close()  # no session of ours may hold a lock on the tables
        _run([*args, "--clean", "--if-exists", "--single-transaction", str(source)], env)
    else:  # pragma: no cover
        raise BackupError(f"Restores are not supported on {connection.vendor}.")
