"""The web portal and its REST API (issue 29): read-only views of memory (ADR 0077, 0078)."""
