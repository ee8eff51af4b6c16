"""Fault and security drills: real servers, bounded in time."""
