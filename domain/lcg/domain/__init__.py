"""The pure model of lcg: events, commands, deciders and rules; it imports only the stdlib."""
