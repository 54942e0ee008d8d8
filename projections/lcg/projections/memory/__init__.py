"""Agent memory (seed 001, the lambo_* tools): concepts, interactions, edges and write receipts."""
