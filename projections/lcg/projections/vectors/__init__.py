"""The vector projection: a catalog of embedded texts and FAISS indexes built from it."""
