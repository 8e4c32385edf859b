"""The one exception type for mistakes a user can fix: the CLI and the notebooks show it as one line."""


class KitError(Exception):
    """Bad input or environment, described by what was wrong, where, and what to do."""

    def _render_traceback_(self) -> list[str]:
        # IPython (Jupyter, papermill, Kaggle) shows this instead of a traceback: the message is the fix.
        return [f"KitError: {self}"]
