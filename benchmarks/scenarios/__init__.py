"""The cross-session scenario suite: scripted multi-session customer-service conversations
replayed through the SDK, scored on session continuity, task completion, memory accuracy
and leakage (``python -m benchmarks.scenarios``; see :mod:`benchmarks.scenarios.run`)."""
