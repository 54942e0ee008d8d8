"""Lambo agent memory (seed 001): the pure rules of its tools."""
