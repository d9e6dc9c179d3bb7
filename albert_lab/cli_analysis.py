"""CLI commands for analyses (registered on import by cli.py)."""
