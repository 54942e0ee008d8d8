"""The agent-memory model of seed 001 (Lambo): concepts, their identity and their rules."""
