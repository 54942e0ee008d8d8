"""The read side: typed, read-only queries over the projections."""
