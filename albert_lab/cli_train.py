"""CLI commands for training and evaluation (registered on import by cli.py)."""
