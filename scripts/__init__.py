"""Developer tools run from the repo root (``python -m scripts.<tool>``)."""
