"""The Lambo agent-memory model (seed 001): soft locks and write receipts, standard library only."""
