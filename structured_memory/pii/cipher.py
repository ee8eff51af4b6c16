"""AES-256-GCM sealing of PII and the HMAC blind index used to find it.

Each key of the ring is split with HKDF-SHA256 into an encryption key and a
blind-index key, so the two uses never share key material. Ciphertexts are
bound to their row by associated data (vault id, user id, kind), so moving a
ciphertext to another row or user fails authentication like any tampering.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import unicodedata
from dataclasses import dataclass
from functools import cache

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from policies.errors import DecryptionError
from structured_memory.pii.keyring import KeyRing, PiiKey

__all__ = ["PiiCipher", "Sealed", "normalise"]

_NON_DIGIT = re.compile(r"\D")


@dataclass(frozen=True)
class Sealed:
    """A ciphertext with the nonce and the id of the key that sealed it."""

    key_id: str
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


@cache
def _derive(secret: bytes, purpose: bytes) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=purpose).derive(secret)


class PiiCipher:
    """Seals and opens PII with the key ring; computes blind indexes."""

    def __init__(self, ring: KeyRing) -> None:
        self.ring = ring

    def seal(self, plaintext: str, *, aad: bytes) -> Sealed:
        """Encrypt ``plaintext`` under the active key, bound to ``aad``."""
        self.ring.warn_if_stale()
        key = self.ring.active
        nonce = os.urandom(12)
        aes = AESGCM(_derive(key.secret, b"dualtrack-pii-enc-v1"))
        return Sealed(key.key_id, nonce, aes.encrypt(nonce, plaintext.encode("utf-8"), aad))

    def open(self, sealed: Sealed, *, aad: bytes) -> str:
        """Decrypt ``sealed``; raise :class:`DecryptionError` if it fails to authenticate.

        Fails for a tampered nonce, ciphertext or associated data, and for a
        key id the ring does not hold or holds with a different secret.
        """
        key = self.ring.get(sealed.key_id)
        if key is None:
            raise DecryptionError(
                f"the key ring has no key {sealed.key_id!r}", key_id=sealed.key_id
            )
        aes = AESGCM(_derive(key.secret, b"dualtrack-pii-enc-v1"))
        try:
            return aes.decrypt(sealed.nonce, sealed.ciphertext, aad).decode("utf-8")
        except (InvalidTag, ValueError):
            raise DecryptionError(
                "PII ciphertext failed authentication (tampered, or wrong key)",
                key_id=sealed.key_id,
            ) from None

    @staticmethod
    def blind_index_with(key: PiiKey, kind: str, value: str) -> bytes:
        """HMAC-SHA256 of the normalised value under ``key``'s blind-index key."""
        mac_key = _derive(key.secret, b"dualtrack-pii-blind-index-v1")
        message = kind.encode() + b"\x1f" + normalise(kind, value).encode("utf-8")
        return hmac.new(mac_key, message, hashlib.sha256).digest()

    def blind_index(self, kind: str, value: str) -> bytes:
        """The blind index of a value under the active key (what new rows store)."""
        return self.blind_index_with(self.ring.active, kind, value)

    def blind_indexes(self, kind: str, value: str) -> list[bytes]:
        """The blind index under every key of the ring, for lookups during rotation."""
        return [self.blind_index_with(k, kind, value) for k in self.ring.keys]
