"""The graph projection: entities, relationships, episodes and mentions in SQLite."""
