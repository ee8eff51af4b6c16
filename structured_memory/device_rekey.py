"""Moved to :mod:`structured_memory.cross_user.device_rekey`; this path re-exports it
for one release."""

from structured_memory.cross_user.device_rekey import (
    DeviceRekeyReport,
    count_unkeyed_devices,
    rekey_devices,
)

__all__ = ["DeviceRekeyReport", "count_unkeyed_devices", "rekey_devices"]
