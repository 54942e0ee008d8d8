"""The write-ahead log: per-group event streams and the single-writer lease."""
