"""The PII key ring: named AES-256 keys, the first one active.

Text format (``DUALTRACK_PII_KEYS`` or a key file), entries separated by
commas or new lines, ``#`` starting a comment::

    2026-11:q8Vh...base64 of 32 bytes...=:2026-11-01
    2026-08:Zm9v...=:2026-08-01

Each entry is ``key_id:base64(32 random bytes):creation date``. New data is
encrypted with the first (active) key; the others stay to decrypt data not yet
re-encrypted by ``dualtrack rotate-keys``. An active key older than
:data:`MAX_KEY_AGE_DAYS` is reported by the health check and logged once.
"""

from __future__ import annotations

import base64
import binascii
import logging
import os
import re
import secrets
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path

from policies.errors import ConfigurationError

__all__ = ["MAX_KEY_AGE_DAYS", "KeyRing", "PiiKey"]

_log = logging.getLogger(__name__)

MAX_KEY_AGE_DAYS = 90
_KEY_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}")


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


class KeyRing:
    """Named PII keys; ``active`` encrypts, any of them decrypts."""

    def __init__(self, keys: list[PiiKey]) -> None:
        if not keys:
            raise ConfigurationError("the PII key ring is empty")
        ids = [k.key_id for k in keys]
        if len(set(ids)) != len(ids):
            raise ConfigurationError("the PII key ring names a key id twice")
        self._keys = {k.key_id: k for k in keys}
        self.active = keys[0]
        self._warned_stale = False

    @property
    def keys(self) -> list[PiiKey]:
        """All keys, the active one first."""
        return list(self._keys.values())

    def get(self, key_id: str) -> PiiKey | None:
        """The key named ``key_id``, or ``None`` if the ring does not hold it."""
        return self._keys.get(key_id)

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
    def parse(cls, text: str) -> KeyRing:
        """Parse the key-ring text format; raise :class:`ConfigurationError` on any defect.

        Messages name the entry number, never the secret.
        """
        keys: list[PiiKey] = []
        entries = [e.split("#", 1)[0].strip() for e in re.split(r"[,\n]", text)]
        for n, entry in enumerate((e for e in entries if e), start=1):
            parts = entry.split(":")
            if len(parts) != 3:
                raise ConfigurationError(f"PII key entry {n} must be 'key_id:base64key:YYYY-MM-DD'")
            key_id, b64, created = (p.strip() for p in parts)
            if not _KEY_ID_RE.fullmatch(key_id):
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
            keys.append(PiiKey(key_id, secret, day))
        return cls(keys)

    @classmethod
    def load_or_create(cls, path: Path, today: date | None = None) -> KeyRing:
        """Read the key file at ``path``, creating it (mode 0600, one new key) if absent.

        Meant for the embedded default and development; production deployments
        set ``DUALTRACK_PII_KEYS`` or point ``DUALTRACK_PII_KEY_FILE`` at a
        managed secret.
        """
        if not path.exists():
            key = PiiKey.generate(today or datetime.now(UTC).date())
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as fh:
                fh.write("# dualtrack PII key ring: first entry active. Keep secret.\n")
                fh.write(key.to_line() + "\n")
            _log.warning("generated a development PII key file at %s", path)
        return cls.parse(path.read_text())
