"""Programs the process-level tests run as child processes."""
