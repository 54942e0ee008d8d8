"""Storage: the per-group event log (the WAL) and the read models rebuilt from it."""
