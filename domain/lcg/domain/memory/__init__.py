"""The Lambo agent-memory model (seed 001), standard library only: argument rules,
identity, soft locks and write receipts."""
