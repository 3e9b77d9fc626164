"""File operations as root in places a tenant can write, that never follow a tenant's path.

Every call works relative to a directory descriptor the agent opened itself, one name at a
time, with `O_NOFOLLOW` (the `openat` family through `dir_fd=`): a symbolic link planted
where a folder or file is expected makes the step refuse with an `AgentError` naming it,
and a hard link (a second name for a file someone else owns) is refused the same way. The
target of a link is never opened, changed or removed; removing a planted link removes only
the link.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat

from .common import AgentError

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def _describe(parent_fd, name):
    """What stands at `name` (for the refusal), without following it."""
    try:
        info = os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
    except FileNotFoundError:
        return "nothing"
    if stat.S_ISLNK(info.st_mode):
        try:
            return f"a symbolic link to {os.readlink(name, dir_fd=parent_fd)}"
        except OSError:
            return "a symbolic link"
    return f"{stat.filemode(info.st_mode)} owned by uid {info.st_uid}"


def open_dir(parent_fd, name, *, owners, where):
    """Opens folder `name` under `parent_fd` without following a link; checks its owner."""
    try:
        fd = os.open(name, DIR_FLAGS, dir_fd=parent_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise AgentError(
                f"refusing to follow {where}: it is {_describe(parent_fd, name)}, not a folder"
            ) from exc
        raise
    info = os.fstat(fd)
    if info.st_uid not in owners:
        os.close(fd)
        raise AgentError(
            f"refusing to use {where}: it is owned by uid {info.st_uid}, expected {sorted(owners)}"
        )
    return fd


def open_base(path):
    """The operator's own folder (home base, /tmp): resolved once, it is not a tenant's path."""
    return os.open(os.path.realpath(path), DIR_FLAGS)


def ensure_dir(parent_fd, name, *, mode, uid, gid, where):
    """Makes (or checks) folder `name` owned by uid:gid with `mode`; returns its descriptor.

    An existing folder must already belong to uid or root; anything else there is refused.
    """
    with contextlib.suppress(FileExistsError):
        os.mkdir(name, 0o700, dir_fd=parent_fd)
    fd = open_dir(parent_fd, name, owners={0, uid}, where=where)
    os.fchown(fd, uid, gid)
    os.fchmod(fd, mode)
    return fd


def read_text(parent_fd, name, *, owners, where):
    """The text of regular file `name`, or None when absent; a link or a foreign file refused."""
    try:
        fd = os.open(name, FILE_FLAGS, dir_fd=parent_fd)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise AgentError(
                f"refusing to read {where}: it is {_describe(parent_fd, name)}"
            ) from exc
        raise
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1 or info.st_uid not in owners:
            raise AgentError(
                f"refusing to read {where}: it is {stat.filemode(info.st_mode)} with "
                f"{info.st_nlink} names, owned by uid {info.st_uid}"
            )
        return handle.read(1_000_000).decode("utf-8", "replace")


def write_text(parent_fd, name, text, *, mode, uid=0, gid=0):
    """Replaces `name` atomically with a new file (a planted link is replaced, not followed)."""
    tmp = f".{name}.kd-tmp"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp, dir_fd=parent_fd)
    fd = os.open(
        tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=parent_fd
    )
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
        os.fchown(handle.fileno(), uid, gid)
        os.fchmod(handle.fileno(), mode)
    os.replace(tmp, name, src_dir_fd=parent_fd, dst_dir_fd=parent_fd)


def unlink(parent_fd, name):
    """Removes the name `name` (a file or a link itself); True when something was removed."""
    try:
        os.unlink(name, dir_fd=parent_fd)
    except FileNotFoundError:
        return False
    return True


def remove_tree(parent_fd, name):
    """Removes folder `name` and all inside it, descending only through real folders."""
    try:
        info = os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(info.st_mode):
        os.unlink(name, dir_fd=parent_fd)
        return
    for _top, dirs, files, fd in os.fwalk(
        name, topdown=False, follow_symlinks=False, dir_fd=parent_fd
    ):
        for entry in files:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(entry, dir_fd=fd)
        for entry in dirs:
            with contextlib.suppress(FileNotFoundError):
                if stat.S_ISDIR(os.stat(entry, dir_fd=fd, follow_symlinks=False).st_mode):
                    os.rmdir(entry, dir_fd=fd)
                else:
                    os.unlink(entry, dir_fd=fd)
    os.rmdir(name, dir_fd=parent_fd)


def remove_owned(top, uid):
    """Removes every entry owned by `uid` under the shared folder `top` (/tmp, /dev/shm...).

    Walks by descriptors without following links; a folder of uid's is emptied of uid's
    entries and removed when nothing of anyone else remains in it. Returns what stays.
    """
    try:
        base = open_base(top)
    except FileNotFoundError:
        return []
    left = []
    try:
        for rel, dirs, files, fd in os.fwalk(
            ".", topdown=False, follow_symlinks=False, dir_fd=base
        ):
            for entry in files + dirs:
                try:
                    info = os.stat(entry, dir_fd=fd, follow_symlinks=False)
                except FileNotFoundError:
                    continue
                if info.st_uid != uid:
                    continue
                try:
                    if stat.S_ISDIR(info.st_mode):
                        os.rmdir(entry, dir_fd=fd)
                    else:
                        os.unlink(entry, dir_fd=fd)
                except OSError:
                    left.append(os.path.join(top, rel, entry))
    finally:
        os.close(base)
    return left
