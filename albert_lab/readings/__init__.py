"""What each page says beside its figures, as text made from an analysis's own numbers: the app shows
it, a notebook's Result carries it (`Result.reading`). Pure functions of the frames; markdown."""
