"""The write side: handlers that validate, decide and append events to a group's stream."""
