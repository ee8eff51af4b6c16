"""Delivery of ledger changes to derived search indexes."""

from unstructured_memory.outbox.worker import DrainReport, OutboxWorker

__all__ = ["DrainReport", "OutboxWorker"]
