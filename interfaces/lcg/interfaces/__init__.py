"""The application shell: configuration, wiring, the operation table and the CLI."""
