"""Errors a user can cause. Each message says what was wrong and what to do."""


class AlbertLabError(ValueError):
    """Base class: the CLI prints these as one line, the app as a message box."""


class SpecError(AlbertLabError):
    """An invalid model spec; names the field and the allowed values."""

    def __init__(self, field: str, message: str):
        self.field = field
        super().__init__(f"{field}: {message}")


class CheckpointError(AlbertLabError):
    """A checkpoint that cannot be found, read or trusted."""


class DataError(AlbertLabError):
    """A corpus or pairs file that cannot be used."""


class RunError(AlbertLabError):
    """A training run that cannot be started, resumed or cancelled."""
