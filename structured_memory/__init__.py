"""Structured track: PostgreSQL engine, models, migrations, repositories, PII vault."""
