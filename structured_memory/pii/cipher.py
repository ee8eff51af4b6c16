"""Envelope encryption of PII (AES-256-GCM) and the HMAC blind index used to find it.

Two formats of a vault row, told apart by its ``dek`` flag:

- **envelope** (``dek`` true, ``key_id`` NULL; every row written since
  revision 0004): the value is sealed under the user's *data key*, 32 random
  bytes kept in ``pii_data_key`` sealed ("wrapped") under
  HKDF(ring key, ``dualtrack-pii-wrap-v1``) of the ring key named beside it,
  with the user id as associated data. Rotation re-wraps the data keys;
  values are never re-encrypted. Erasing the user deletes the data key.
- **ring** (``dek`` false): the format before 0004, the value sealed directly
  under HKDF(ring key ``key_id``, ``dualtrack-pii-enc-v1``). Read only;
  ``dualtrack rotate-keys`` moves such rows to the envelope format.

In both, associated data binds the value's ciphertext to its row (vault id,
user id, kind), so a ciphertext moved to another row or user fails
authentication like any tampering. The blind index is HMAC-SHA256 of
``kind 0x1f normalised value`` under HKDF(blind key,
``dualtrack-pii-blind-index-v2``) (column ``match_mac``, and ``blind_mac`` of rows
before 0014); the exact index the same HMAC of ``kind 0x1f value`` as given
(column ``blind_mac``, unique: one entry per exact value), equal to the blind index
for a value in normal form. The index of the ring format used HKDF(ring key,
``dualtrack-pii-blind-index-v1``) (column ``blind_index``, still written under
the active ring key for clients older than 0004 during a rolling upgrade). A
wrapped data key is 48 bytes (32 plus the 16-byte tag); every nonce is 96 random
bits.

A device fingerprint is HMAC-SHA256 of the device's SHA-256 (of device id, OS and
browser) under HKDF(blind key, ``dualtrack-device-fingerprint-v1 0x1f user id``): a key
per user, which rotation never changes, as it never changes the blind key.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import unicodedata
from dataclasses import dataclass

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from policies.errors import DecryptionError
from structured_memory.pii.keyring import KeyRing, PiiKey, derive_key

__all__ = ["DATA_KEY_BYTES", "PiiCipher", "Sealed", "normalise"]

DATA_KEY_BYTES = 32

_NON_DIGIT = re.compile(r"\D")
_ENC_V1 = b"dualtrack-pii-enc-v1"
_WRAP_V1 = b"dualtrack-pii-wrap-v1"
_BLIND_V1 = b"dualtrack-pii-blind-index-v1"
_BLIND_V2 = b"dualtrack-pii-blind-index-v2"
_DATA_KEY_AAD = b"dualtrack-data-key-v1\x1f"
_DEVICE_V1 = b"dualtrack-device-fingerprint-v1\x1f"


@dataclass(frozen=True)
class Sealed:
    """A ciphertext, its nonce and the ring key that sealed it (``None``: a data key)."""

    key_id: str | None
    nonce: bytes
    ciphertext: bytes


def normalise(kind: str, value: str) -> str:
    """The canonical form of a PII value, so equal values share a blind index.

    Phones and card numbers keep their digits (a leading ``86`` country code
    is dropped from 13-digit phones); emails are lower-cased; ID cards are
    upper-cased; addresses are NFKC-normalised with white space removed.
    """
    value = unicodedata.normalize("NFKC", value).strip()
    if kind == "phone":
        digits = _NON_DIGIT.sub("", value)
        return digits[2:] if len(digits) == 13 and digits.startswith("86") else digits
    if kind == "bank_card":
        return _NON_DIGIT.sub("", value)
    if kind == "email":
        return value.lower()
    if kind == "id_card":
        return value.upper().replace(" ", "")
    return "".join(value.split())


def _hmac(key: bytes, kind: str, value: str) -> bytes:
    return _mac(key, kind, normalise(kind, value))


def _mac(key: bytes, kind: str, value: str) -> bytes:
    message = kind.encode() + b"\x1f" + value.encode("utf-8")
    return hmac.new(key, message, hashlib.sha256).digest()


def _decrypt(key: bytes, sealed: Sealed, aad: bytes, what: str) -> bytes:
    try:
        return AESGCM(key).decrypt(sealed.nonce, sealed.ciphertext, aad)
    except (InvalidTag, ValueError):
        raise DecryptionError(
            f"{what} failed authentication (tampered, or wrong key)", key_id=sealed.key_id
        ) from None


class PiiCipher:
    """Wraps data keys with the ring, seals values with data keys, computes blind indexes."""

    def __init__(self, ring: KeyRing) -> None:
        self.ring = ring

    def _ring_key(self, key_id: str) -> PiiKey:
        key = self.ring.find(key_id)
        if key is None:
            raise DecryptionError(f"the key ring has no key {key_id!r}", key_id=key_id)
        return key

    @staticmethod
    def new_data_key() -> bytes:
        """A fresh random data key."""
        return os.urandom(DATA_KEY_BYTES)

    def wrap(self, data_key: bytes, user_id: str) -> Sealed:
        """Seal ``user_id``'s data key under the active ring key."""
        self.ring.warn_if_stale()
        key = self.ring.active
        nonce = os.urandom(12)
        aes = AESGCM(derive_key(key.secret, _WRAP_V1))
        return Sealed(
            key.key_id, nonce, aes.encrypt(nonce, data_key, _DATA_KEY_AAD + user_id.encode())
        )

    def unwrap(self, wrapped: Sealed, user_id: str) -> bytes:
        """``user_id``'s data key; :class:`DecryptionError` if it was tampered with, belongs
        to another user, or its ring key is unknown (after one re-read of a key file)."""
        assert wrapped.key_id is not None
        key = derive_key(self._ring_key(wrapped.key_id).secret, _WRAP_V1)
        data_key = _decrypt(key, wrapped, _DATA_KEY_AAD + user_id.encode(), "a PII data key")
        if len(data_key) != DATA_KEY_BYTES:
            raise DecryptionError("a PII data key has the wrong length", key_id=wrapped.key_id)
        return data_key

    def seal(self, plaintext: str, *, aad: bytes, data_key: bytes) -> Sealed:
        """Encrypt ``plaintext`` under ``data_key``, bound to ``aad``."""
        self.ring.warn_if_stale()
        nonce = os.urandom(12)
        return Sealed(None, nonce, AESGCM(data_key).encrypt(nonce, plaintext.encode("utf-8"), aad))

    def open(self, sealed: Sealed, *, aad: bytes, data_key: bytes | None = None) -> str:
        """Decrypt a value; raise :class:`DecryptionError` if it fails to authenticate.

        ``sealed.key_id`` ``None`` (envelope format) needs the user's ``data_key``;
        otherwise the ring key of that id opens it (ring format). Fails for a
        tampered nonce, ciphertext or associated data, and for a key the ring
        does not hold or holds with a different secret.
        """
        if sealed.key_id is None:
            if data_key is None:
                raise DecryptionError("the user's PII data key is missing", key_id=None)
            key = data_key
        else:
            key = derive_key(self._ring_key(sealed.key_id).secret, _ENC_V1)
        return _decrypt(key, sealed, aad, "PII ciphertext").decode("utf-8")

    def blind_index(self, kind: str, value: str) -> bytes:
        """The blind index of a value's normalised form under the blind key (column
        ``match_mac``): every spelling of one value has it."""
        return _hmac(derive_key(self.ring.blind.secret, _BLIND_V2), kind, value)

    def exact_index(self, kind: str, value: str) -> bytes:
        """The blind index of the value exactly as given (column ``blind_mac``)."""
        return _mac(derive_key(self.ring.blind.secret, _BLIND_V2), kind, value)

    def device_fingerprint(self, user_id: str, digest: str) -> str:
        """The fingerprint of a device of ``user_id``: 64 hex digits, keyed for the user,
        of ``digest`` (the SHA-256 hex of device id, OS and browser)."""
        key = derive_key(self.ring.blind.secret, _DEVICE_V1 + user_id.encode())
        return hmac.new(key, bytes.fromhex(digest), hashlib.sha256).hexdigest()

    def purpose_key(self, purpose: bytes) -> bytes:
        """A key of the blind key's for ``purpose`` (HKDF): the same on every pod and
        across rotations, for keyed hashes outside the vault (rate-limit bucket names)."""
        return derive_key(self.ring.blind.secret, purpose)

    def legacy_blind_index(self, kind: str, value: str) -> bytes:
        """The ring-format blind index under the active ring key (column ``blind_index``)."""
        return _hmac(derive_key(self.ring.active.secret, _BLIND_V1), kind, value)

    def legacy_blind_indexes(self, kind: str, value: str) -> list[bytes]:
        """The ring-format blind index under every ring key, to find rows not yet repaired."""
        return [_hmac(derive_key(k.secret, _BLIND_V1), kind, value) for k in self.ring.keys]
