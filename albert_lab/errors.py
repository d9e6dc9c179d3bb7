"""Errors a user can cause. Each message says what was wrong and what to do."""


MAX_MESSAGE_CHARS = 1000  # a message quoting a user's 5 MB line shows its start and says how much is left out


class AlbertLabError(ValueError):
    """Base class: the CLI prints these as one line, the app as a message box. A message over
    MAX_MESSAGE_CHARS keeps its start and its end (where the advice is), the middle counted."""

    def __init__(self, message: object = "", *args: object):
        text = str(message)
        if len(text) > MAX_MESSAGE_CHARS:
            keep = MAX_MESSAGE_CHARS // 2
            text = f"{text[:keep]} ... ({len(text) - 2 * keep:,} characters left out) ... {text[-keep:]}"
        super().__init__(text, *args)


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
