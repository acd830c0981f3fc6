"""Atomic checkpoint writes, and removal of the temporaries that crashed writers left behind.

A save writes ``.<name>.<host>-<pid>.<random>.tmp`` next to the target, fsyncs it and renames
it over the target, so the target is always either the old or the new checkpoint. A writer
killed mid-save cannot delete its temporary, which may be as large as the checkpoint; the next
save of the same target removes it (see :func:`remove_stale_temps` for exactly which).
"""

from __future__ import annotations

import os
import re
import socket
import stat
import tempfile
import time
import zlib
from collections.abc import Callable

#: A temporary not modified for this long is abandoned whoever wrote it: a live writer writes
#: its file continuously and renames it as soon as it is complete.
STALE_TEMP_SECONDS = 6 * 3600

#: Tells this host's temporaries from those of other hosts sharing the directory (where a
#: writer's pid means nothing to us).
HOST_TAG = f"{zlib.crc32(socket.gethostname().encode()):08x}"


def write_atomically(path: str, write: Callable[[str], None]) -> None:
    """Call ``write(tmp)`` to fill a new temporary file, then make it ``path`` atomically.

    If anything fails (or is interrupted) the temporary is removed and ``path`` is untouched.
    The new file gets the old file's permission bits, or the umask's default for a new one.
    A ``path`` that exists and is not a regular file (``/dev/null``, a FIFO) is written in
    place: renaming over it would replace the device or pipe itself.
    """
    try:
        mode = os.stat(path).st_mode
    except OSError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
        write(path)
        return
    directory = os.path.dirname(os.path.abspath(path))
    base = os.path.basename(path)
    remove_stale_temps(directory, base)
    fd, tmp = tempfile.mkstemp(prefix=f".{base}.{HOST_TAG}-{os.getpid()}.", suffix=".tmp",
                               dir=directory)
    os.close(fd)
    try:
        write(tmp)
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.chmod(tmp, _mode_for(path))
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def _mode_for(path: str) -> int:
    try:
        return os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


def _temp_pattern(base: str) -> re.Pattern[str]:
    """Our temporaries for target ``base``: ``.<base>.<host>-<pid>.<random>.tmp``, and the
    ``.<base>.<random>.tmp`` of jflow versions before the host and pid were recorded."""
    return re.compile(rf"\.{re.escape(base)}\.(?:([0-9a-f]{{8}})-([0-9]{{1,10}})\.)?"
                      rf"[a-z0-9_]{{8}}\.tmp")


def remove_stale_temps(directory: str, base: str, now: float | None = None) -> list[str]:
    """Remove abandoned temporaries of target ``base`` in ``directory``; return their paths.

    A temporary is removed only if it is a regular file owned by the current user whose name
    matches :func:`_temp_pattern` for this very target, and either

    * its writer ran on this host and that process no longer exists (POSIX only), or
    * it has not been modified for :data:`STALE_TEMP_SECONDS` (which also covers writers on
      other hosts sharing the directory, and temporaries of older jflow versions).

    A live writer's file is therefore never removed. Errors are ignored: cleanup is best
    effort and must never make a save fail.
    """
    now = time.time() if now is None else now
    pattern = _temp_pattern(base)
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    removed = []
    for n in names:
        m = pattern.fullmatch(n)
        p = os.path.join(directory, n)
        if m and _is_stale(p, m.group(1), m.group(2), now):
            try:
                os.unlink(p)
                removed.append(p)
            except OSError:
                pass
    return removed


def _is_stale(path: str, host: str | None, pid: str | None, now: float) -> bool:
    try:
        st = os.lstat(path)
    except OSError:
        return False
    if not stat.S_ISREG(st.st_mode):
        return False
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return False
    if now - st.st_mtime > STALE_TEMP_SECONDS:
        return True
    return host == HOST_TAG and pid is not None and not _pid_alive(int(pid))


def _pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists on this host (``True`` when we cannot tell)."""
    if os.name != "posix" or pid <= 0:
        return True  # on Windows os.kill(pid, 0) would send CTRL_C_EVENT, not probe
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OverflowError:
        return False  # no such pid can exist
    except OSError:
        return True  # e.g. PermissionError: it exists, owned by someone else
    return True
