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


def private_folder(folder: Path) -> Path:
    """Create `folder` and its missing parents as 0700 (whatever the umask); folders that
    already exist keep their mode."""
    folder = target = Path(folder)
    missing = []
    while not folder.exists():
        missing.append(folder)
        if folder.parent == folder:
            break
        folder = folder.parent
    for path in reversed(missing):
        path.mkdir(mode=0o700, exist_ok=True)
        path.chmod(0o700)
    return target


def _private_file(path: Path) -> None:
    """Create `path`, empty and readable by its owner only, before any byte is written."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.fchmod(fd, 0o600)  # whatever the umask
    finally:
        os.close(fd)


def database_backup(*, destination: Path) -> Path:
    """Write a consistent copy of the live database to `destination`.

    SQLite: the online backup API copies pages while other processes keep writing (WAL).
    PostgreSQL: `pg_dump` in its custom format, one snapshot.
    The file holds every row: it is written 0600 (missing folders above it are created
    0700) under a temporary name, then renamed, so a failed backup leaves no partial file
    and never replaces an older one.
    """
    destination = Path(destination)
    private_folder(destination.parent)
    connection.ensure_connection()
    if connection.vendor not in {"sqlite", "postgresql"}:  # pragma: no cover
        raise BackupError(f"Backups are not supported on {connection.vendor}.")
    partial = destination.with_name(f".{destination.name}.{os.getpid()}.partial")
    partial.unlink(missing_ok=True)
    _private_file(partial)
    try:
        if connection.vendor == "sqlite":
            target = sqlite3.connect(partial)
            try:
                connection.connection.backup(target)
            finally:
                target.close()
        else:
            args, env = _postgres_command("pg_dump")
            # pg_dump truncates the existing 0600 file and keeps its mode.
            _run([*args, "--format=custom", "--file", str(partial)], env)
        os.replace(partial, destination)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
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
