"""The PII key ring: named AES-256 ring keys, the first one active, and one blind key.

Text format (``DUALTRACK_PII_KEYS`` or a key file), entries separated by
commas or new lines, ``#`` starting a comment::

    @blind:Yk9v...base64 of 32 bytes...=:2026-08-01
    2026-11:q8Vh...base64 of 32 bytes...=:2026-11-01
    2026-08:Zm9v...=:2026-08-01

**Ring keys** are ``key_id:base64(32 random bytes):creation date``. The first
is active: it wraps every user's data key (envelope encryption, see
:mod:`structured_memory.pii.cipher`). The others only unwrap data keys not yet
re-wrapped by ``dualtrack rotate-keys`` (and read entries of the format before
envelope encryption). An active key older than :data:`MAX_KEY_AGE_DAYS` is
reported by the health check and logged once. Rotating: put a new key
(``dualtrack new-key``) first, run ``dualtrack rotate-keys``, and remove the old
key once no backup that holds data keys wrapped by it is kept (the backup
retention window): from then on those copies, and the PII they protect, are
unreadable.

**The blind key** ``@blind:base64(32 bytes):date`` (at most one entry; ``@`` is
never part of a key id) keys the HMAC blind index that finds a value without
decrypting it. Rotation never changes it, so one value of one user has one
blind index under every ring, on every pod, before and after rotation: that
is what the unique index on (user, kind, blind index) relies on. A ring
without an ``@blind`` entry (as written before it existed) derives its blind
key from its oldest ring key (earliest date; on a tie, the last listed) with
HKDF; adding keys keeps it, so existing indexes stay valid. Before retiring
that oldest key, pin the derived blind key: ``dualtrack new-key --blind``
prints it as an ``@blind`` entry to add. A generated key file has one.

A ring loaded from a file keeps its path: on meeting a key id it does not hold
(another pod rotated), it re-reads the file once before failing. A re-read
that would change the blind key is refused with :class:`ConfigurationError`.
"""

from __future__ import annotations

import base64
import binascii
import logging
import os
import re
import secrets
import threading
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from functools import lru_cache
from pathlib import Path

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from policies.errors import ConfigurationError

__all__ = ["BLIND_ENTRY", "MAX_KEY_AGE_DAYS", "KeyRing", "PiiKey", "derive_key"]

_log = logging.getLogger(__name__)

MAX_KEY_AGE_DAYS = 90
BLIND_ENTRY = "@blind"
"""The id of the blind-key entry of a ring (never a valid ring key id)."""

_KEY_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}")


@lru_cache(maxsize=256)
def derive_key(secret: bytes, purpose: bytes) -> bytes:
    """A 256-bit key for one ``purpose``, split from ``secret`` with HKDF-SHA256."""
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=purpose).derive(secret)


@dataclass(frozen=True)
class PiiKey:
    """One named 256-bit key and the day it was created."""

    key_id: str
    secret: bytes = field(repr=False)
    created: date

    def age_days(self, today: date) -> int:
        """Whole days since the key was created."""
        return (today - self.created).days

    def to_line(self) -> str:
        """The key in the key-ring text format."""
        return f"{self.key_id}:{base64.b64encode(self.secret).decode()}:{self.created.isoformat()}"

    @classmethod
    def generate(cls, today: date, key_id: str | None = None) -> PiiKey:
        """A fresh random key; its id defaults to the date and a random suffix."""
        kid = key_id or f"{today.isoformat()}-{secrets.token_hex(3)}"
        return cls(kid, secrets.token_bytes(32), today)


@dataclass(frozen=True)
class _Ring:
    """One immutable state of a ring, swapped whole on reload."""

    keys: dict[str, PiiKey]
    active: PiiKey
    blind: PiiKey
    blind_pinned: bool


def _ring(keys: list[PiiKey], blind: PiiKey | None) -> _Ring:
    if not keys:
        raise ConfigurationError("the PII key ring has no ring key")
    ids = [k.key_id for k in keys]
    if len(set(ids)) != len(ids):
        raise ConfigurationError("the PII key ring names a key id twice")
    if blind is None:
        oldest = min(reversed(keys), key=lambda k: k.created)
        secret = derive_key(oldest.secret, b"dualtrack-pii-blind-key-v1")
        return _Ring(
            {k.key_id: k for k in keys}, keys[0], PiiKey(BLIND_ENTRY, secret, oldest.created), False
        )
    return _Ring({k.key_id: k for k in keys}, keys[0], blind, True)


def _parse(text: str) -> _Ring:
    keys: list[PiiKey] = []
    blind: PiiKey | None = None
    entries = [e.split("#", 1)[0].strip() for e in re.split(r"[,\n]", text)]
    for n, entry in enumerate((e for e in entries if e), start=1):
        parts = entry.split(":")
        if len(parts) != 3:
            raise ConfigurationError(f"PII key entry {n} must be 'key_id:base64key:YYYY-MM-DD'")
        key_id, b64, created = (p.strip() for p in parts)
        if key_id != BLIND_ENTRY and not _KEY_ID_RE.fullmatch(key_id):
            raise ConfigurationError(f"PII key entry {n} has an invalid key id")
        try:
            secret = base64.b64decode(b64, validate=True)
        except (binascii.Error, ValueError):
            raise ConfigurationError(f"PII key entry {n} is not valid base64") from None
        if len(secret) != 32:
            raise ConfigurationError(
                f"PII key entry {n} must decode to 32 bytes, not {len(secret)}"
            )
        try:
            day = date.fromisoformat(created)
        except ValueError:
            raise ConfigurationError(f"PII key entry {n} has an invalid date") from None
        if key_id != BLIND_ENTRY:
            keys.append(PiiKey(key_id, secret, day))
        elif blind is None:
            blind = PiiKey(key_id, secret, day)
        else:
            raise ConfigurationError(f"PII key entry {n} is a second {BLIND_ENTRY} entry")
    return _ring(keys, blind)


class KeyRing:
    """Named PII keys (``active`` wraps, any of them unwraps) and the blind key.

    Thread-safe: a reload swaps the whole state at once.
    """

    def __init__(
        self, keys: list[PiiKey], blind: PiiKey | None = None, *, path: Path | None = None
    ) -> None:
        self._state = _ring(keys, blind)
        self.path = path
        self._reload_lock = threading.Lock()
        self._warned_stale = False

    @property
    def active(self) -> PiiKey:
        """The ring key that wraps data keys now."""
        return self._state.active

    @property
    def keys(self) -> list[PiiKey]:
        """All ring keys, the active one first (not the blind key)."""
        return list(self._state.keys.values())

    @property
    def blind(self) -> PiiKey:
        """The blind-index key (``@blind`` entry, or derived from the oldest ring key)."""
        return self._state.blind

    @property
    def blind_pinned(self) -> bool:
        """Whether the ring names its blind key in an ``@blind`` entry."""
        return self._state.blind_pinned

    def get(self, key_id: str) -> PiiKey | None:
        """The ring key named ``key_id``, or ``None`` if the ring does not hold it."""
        return self._state.keys.get(key_id)

    def find(self, key_id: str) -> PiiKey | None:
        """Like :meth:`get`, but a ring loaded from a file re-reads it once on a miss.

        Concurrent misses share one re-read. Raises :class:`ConfigurationError`
        if the re-read file is unreadable, malformed or changes the blind key.
        """
        state = self._state
        key = state.keys.get(key_id)
        if key is not None or self.path is None:
            return key
        with self._reload_lock:
            if self._state is state:
                self._reload_locked()
            return self._state.keys.get(key_id)

    def reload(self) -> None:
        """Re-read the key file (a ring parsed from text has none: no-op)."""
        if self.path is not None:
            with self._reload_lock:
                self._reload_locked()

    def _reload_locked(self) -> None:
        assert self.path is not None
        try:
            text = self.path.read_text()
        except OSError as err:
            raise ConfigurationError(f"cannot read the PII key file: {err.strerror}") from None
        state = _parse(text)
        if state.blind.secret != self._state.blind.secret:
            raise ConfigurationError(
                "the PII key file now has another blind key; blind indexes would no longer "
                "match (pin the previous one with an @blind entry)"
            )
        self._state = state
        _log.info("reloaded the PII key ring; active key %s", state.active.key_id)

    def active_is_stale(self, today: date | None = None) -> bool:
        """Whether the active key is older than :data:`MAX_KEY_AGE_DAYS`."""
        today = today or datetime.now(UTC).date()
        return self.active.age_days(today) > MAX_KEY_AGE_DAYS

    def warn_if_stale(self, today: date | None = None) -> None:
        """Log one warning per ring when the active key is past its rotation date."""
        if not self._warned_stale and self.active_is_stale(today):
            self._warned_stale = True
            _log.warning(
                "PII key %s is older than %d days: add a new key first in the ring "
                "and run `dualtrack rotate-keys`",
                self.active.key_id,
                MAX_KEY_AGE_DAYS,
            )

    @classmethod
    def parse(cls, text: str, *, path: Path | None = None) -> KeyRing:
        """Parse the key-ring text format; raise :class:`ConfigurationError` on any defect.

        Messages name the entry number, never the secret. ``path`` is where
        :meth:`find` re-reads the ring from.
        """
        state = _parse(text)
        return cls(
            list(state.keys.values()), state.blind if state.blind_pinned else None, path=path
        )

    @classmethod
    def load_or_create(cls, path: Path, today: date | None = None, *, mode: int = 0o600) -> KeyRing:
        """Read the key file at ``path``, creating it (``mode``, one new key and a blind
        key) if absent; the ring re-reads the file on an unknown key id.

        Meant for the embedded default and development; production deployments
        set ``DUALTRACK_PII_KEYS`` or point ``DUALTRACK_PII_KEY_FILE`` at a
        managed secret.
        """
        if not path.exists():
            today = today or datetime.now(UTC).date()
            path.parent.mkdir(parents=True, exist_ok=True)
            draft = path.with_name(f".{path.name}.{secrets.token_hex(4)}")
            fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            os.fchmod(fd, mode)  # exactly ``mode``, whatever the umask
            with os.fdopen(fd, "w") as fh:
                fh.write("# dualtrack PII key ring: first ring key active. Keep secret.\n")
                fh.write(PiiKey.generate(today, BLIND_ENTRY).to_line() + "\n")
                fh.write(PiiKey.generate(today).to_line() + "\n")
            try:
                os.link(draft, path)  # appears whole, or not at all if another process won
                _log.warning("generated a development PII key file at %s", path)
            except FileExistsError:
                pass
            finally:
                os.unlink(draft)
        return cls.parse(path.read_text(), path=path)
