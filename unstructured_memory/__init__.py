"""Unstructured track: summaries, embeddings, fragment ledger and search indexes."""
