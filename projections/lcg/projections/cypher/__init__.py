"""The Cypher projection (ladybug), ADR 0039."""
