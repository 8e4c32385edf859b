"""The top floor: one notebook run. A template notebook imports its verbs from here alone."""
from kit.pipelines import create_pipeline
from kit.run.fallback import load_data
from kit.run.folds import train_folds
from kit.run.plots import plot_history, plot_importance
from kit.run.start import start
from kit.run.submission import write_submission

__all__ = ["start", "create_pipeline", "load_data", "train_folds", "write_submission", "plot_history", "plot_importance"]
