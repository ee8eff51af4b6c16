"""Compatibility: the structured track's records, re-exported for one release.

They are ``values.records``'s now (no engine behind them); import them from there.
"""

from values.records import BusinessLink, Device, Fact, Profile

__all__ = ["BusinessLink", "Device", "Fact", "Profile"]
