"""XGBoost, LightGBM and CatBoost behind one small interface, each library imported only when it is asked for.

`create` returns a `Booster` for a `Task` (a binary probability, class probabilities or a value): it trains on
one fold with early stopping on the validation rows and a `clock` it asks after every round (kit.train.boosting
plans the rounds), predicts at its best round or any earlier one, names its features' importance, and turns
into its library's own serialized model and back (`state`, `restore`), which kit's fold checkpoints carry.
On a GPU: XGBoost with device="cuda", CatBoost with task_type="GPU"; LightGBM's pip wheel has an OpenCL learner
only, rarely faster, so it stays on the CPU. CatBoost is never handed a callback: on a GPU it takes none ("User
defined callbacks are not supported for GPU"), and on the CPU each call builds every metric's history so far,
so 5,000 rounds on wine took 56 s with one and 13 s without; its rounds are planned before it starts.

Every library stops on its loss (log loss, or the value's error), whatever the competition's metric: the AUC of a
small validation fold moves one pair of rows at a time, so its first maximum, which early stopping keeps, comes by
chance and early (breast cancer's folds, 80 validation rows each, kept rounds 1, 11, 25, 27 and 217 of XGBoost's); the
loss, which every row's confidence moves, breaks such ties (kit.train.best does the same for epochs). Stopped on the
loss, held-out AUC over six splits rose on breast cancer and Palmer's penguins for each library (XGBoost 0.9879 to
0.9897 and 0.9724 to 0.9735, LightGBM 0.9886 to 0.9901 and 0.9774 to 0.9781, CatBoost 0.9882 to 0.9904 and 0.9768
to 0.9793).
"""
from __future__ import annotations

import importlib
import os
import tempfile
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from kit.errors import KitError
from kit.runtime import versions

LIBRARIES = {"xgboost": "xgboost", "lightgbm": "lightgbm", "catboost": "catboost"}  # model_name: module
OLDEST = {"xgboost": ("2.0", "the device parameter"), "lightgbm": ("4.0", "early stopping's callback"),
          "catboost": ("1.2", "models loaded from bytes")}  # what kit needs of each, and why
# below this many cells (rows x features) a booster runs on one thread: its threads would wait for each other
# longer than they work (XGBoost on 275 x 54 cells took 10 s for 100 rounds on 2 threads, 0.5 s on one)
PARALLEL_CELLS = 1_000_000
Clock = Callable[[int], bool]  # asked with the rounds done after each round; True stops


@dataclass(frozen=True)
class Task:
    kind: str  # "binary", "multiclass" or "regression"
    classes: int = 2  # multiclass: how many
    l1: bool = False  # regression on the absolute error (mae, group_log_mae, laplace: spec.absolute)


@dataclass(frozen=True)
class Settings:
    learning_rate: float = 0.05
    early_stopping_rounds: int = 200  # 0: never
    max_depth: int = 6
    num_leaves: int = 31
    subsample: float = 0.8
    colsample: float = 0.8
    seed: int = 0
    threads: int = 1
    device: str = "cpu"  # or "cuda:N"


@dataclass
class Curves:
    """What a fit left: the stop metric's values per round on the training and validation rows."""

    metric: str = ""
    train: list[float] = field(default_factory=list)
    valid: list[float] = field(default_factory=list)


def library(name: str) -> Any:
    """The booster library `name`, or one line saying how to install it (or a newer one)."""
    try:
        module = importlib.import_module(LIBRARIES[name])
    except ImportError:
        wheel = "xgboost-cpu" if name == "xgboost" else name
        raise KitError(f"model_name '{name}' needs the {name} package, which this Python lacks; pip install {wheel} "
                       "(Kaggle's image has it)") from None
    oldest, why = OLDEST[name]
    if versions.parse(module.__version__) < versions.parse(oldest):
        raise KitError(f"{name} {module.__version__} is older than kit's tabular template supports ({name}>={oldest}: "
                       f"{why}); upgrade it, or use Kaggle's latest environment")
    return module


def threads(cells: int, available: int) -> int:
    """The threads a booster uses on a table of `cells` values, of the `available` ones."""
    return max(1, available) if cells >= PARALLEL_CELLS else 1


def version(name: str) -> str:
    return str(library(name).__version__)


def create(name: str, task: Task, settings: Settings) -> Booster:
    return {"xgboost": XGBoost, "lightgbm": LightGBM, "catboost": CatBoost}[name](task, settings)


def restore(state: dict, settings: Settings) -> Booster:
    """A booster from its `state()`: the library's serialized model, trained elsewhere (predict mode)."""
    task = {k: v for k, v in state["task"].items() if k != "auc"}  # before issue 42 a task could stop on the AUC
    booster = create(state["library"], Task(**task), settings)
    booster.load(state["model"])
    booster.best, booster.rounds = state["best"], state["rounds"]
    return booster


class Booster:
    """One library's model of one target column; `best` rounds are kept for prediction, of `rounds` run."""

    name = ""
    categories = "category"  # how its frames hold categories (kit.data.features.Encoded.frame)
    stoppable = True  # whether it asks the clock every round (else its rounds are planned before it starts)

    def __init__(self, task: Task, settings: Settings):
        self.task, self.settings = task, settings
        self.model: Any = None
        self.best = self.rounds = 0
        self.curves = Curves()

    def device(self) -> str:
        return self.settings.device

    def state(self) -> dict:
        return {"library": self.name, "version": version(self.name), "task": asdict(self.task), "model": self.dump(),
                "best": self.best, "rounds": self.rounds}

    def predict(self, x: pd.DataFrame, rounds: int = 0) -> np.ndarray:
        """(N,) a binary probability or a value, or (N, classes) probabilities, after `rounds` (0: the best; every
        round run is kept, so the learning curve can look past the best)."""
        return self._predict(x, min(rounds or self.best, self.rounds))

    def importance(self, names: tuple[str, ...]) -> dict[str, float]:
        """Each feature's share of the gain (CatBoost: of its prediction values change)."""
        gains = np.array([self._importance().get(n, 0.0) for n in names], dtype=np.float64)
        total = gains.sum()
        return {n: float(g / total) if total > 0 else 0.0 for n, g in zip(names, gains)}

    # the library's part
    def fit(self, x: pd.DataFrame, y: np.ndarray, xv: pd.DataFrame, yv: np.ndarray, rounds: int, clock: Clock) -> None:
        raise NotImplementedError

    def dump(self) -> bytes:
        raise NotImplementedError

    def load(self, raw: bytes) -> None:
        raise NotImplementedError

    def _predict(self, x: pd.DataFrame, rounds: int) -> np.ndarray:
        raise NotImplementedError

    def _importance(self) -> dict[str, float]:
        raise NotImplementedError


class XGBoost(Booster):
    name = "xgboost"

    def params(self) -> dict:
        t, s = self.task, self.settings
        objective, metric = {"binary": ("binary:logistic", "logloss"),
                             "multiclass": ("multi:softprob", "mlogloss"),
                             "regression": ("reg:absoluteerror", "mae") if t.l1 else ("reg:squarederror", "rmse")}[t.kind]
        p = {"objective": objective, "eval_metric": metric, "eta": s.learning_rate, "max_depth": s.max_depth,
             "subsample": s.subsample, "colsample_bytree": s.colsample, "tree_method": "hist", "device": s.device,
             "nthread": s.threads, "seed": s.seed, "verbosity": 0}
        return {**p, "num_class": t.classes} if t.kind == "multiclass" else p

    def fit(self, x, y, xv, yv, rounds, clock):
        xgb = library(self.name)

        class Asked(xgb.callback.TrainingCallback):
            def after_iteration(self, model, epoch, evals_log):
                return clock(epoch + 1)

        train = xgb.QuantileDMatrix(x, y, enable_categorical=True)
        valid = xgb.QuantileDMatrix(xv, yv, enable_categorical=True, ref=train)
        log: dict = {}
        self.model = xgb.train(self.params(), train, rounds, evals=[(train, "train"), (valid, "valid")],
                               early_stopping_rounds=self.settings.early_stopping_rounds or None, callbacks=[Asked()],
                               evals_result=log, verbose_eval=False)
        self.rounds = self.model.num_boosted_rounds()
        best = self.model.attr("best_iteration")
        self.best = int(best) + 1 if best is not None and self.settings.early_stopping_rounds else self.rounds
        metric = self.params()["eval_metric"]
        self.curves = Curves(metric, log["train"][metric], log["valid"][metric])

    def dump(self):
        return bytes(self.model.save_raw("ubj"))

    def load(self, raw):
        xgb = library(self.name)
        self.model = xgb.Booster()
        self.model.load_model(bytearray(raw))
        self.model.set_param({"nthread": self.settings.threads, "device": self.settings.device, "verbosity": 0})

    def _predict(self, x, rounds):
        xgb = library(self.name)
        return self.model.predict(xgb.DMatrix(x, enable_categorical=True), iteration_range=(0, rounds))

    def _importance(self):
        return self.model.get_score(importance_type="gain")


class LightGBM(Booster):
    name = "lightgbm"

    def device(self) -> str:
        return "cpu"

    def params(self) -> dict:
        t, s = self.task, self.settings
        objective, metric = {"binary": ("binary", "binary_logloss"),
                             "multiclass": ("multiclass", "multi_logloss"),
                             "regression": ("regression_l1", "l1") if t.l1 else ("regression", "rmse")}[t.kind]
        p = {"objective": objective, "metric": metric, "learning_rate": s.learning_rate, "num_leaves": s.num_leaves,
             "bagging_fraction": s.subsample, "bagging_freq": 1 if s.subsample < 1 else 0, "feature_fraction": s.colsample,
             "num_threads": s.threads, "seed": s.seed, "verbose": -1}
        return {**p, "num_class": t.classes} if t.kind == "multiclass" else p

    def fit(self, x, y, xv, yv, rounds, clock):
        lgb = library(self.name)
        patience = self.settings.early_stopping_rounds
        stopper = lgb.early_stopping(patience, first_metric_only=True, verbose=False) if patience else None

        def asked(env) -> None:
            if clock(env.iteration + 1):  # keep early stopping's best, not the round the clock stopped at
                if stopper is not None and stopper.best_iter:
                    raise lgb.callback.EarlyStopException(stopper.best_iter[0], stopper.best_score_list[0])
                raise lgb.callback.EarlyStopException(env.iteration, env.evaluation_result_list)

        asked.order = 40  # after early stopping's (30)
        log: dict = {}
        train = lgb.Dataset(x, y, free_raw_data=False)
        valid = lgb.Dataset(xv, yv, reference=train)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            self.model = lgb.train(self.params(), train, rounds, valid_sets=[train, valid], valid_names=["train", "valid"],
                                   callbacks=[*([stopper] if stopper else []), lgb.record_evaluation(log), asked],
                                   keep_training_booster=True)  # every round: else it is cut to the best
        metric = self.params()["metric"]
        self.curves = Curves(metric, log["train"][metric], log["valid"][metric])
        self.rounds = self.model.current_iteration()
        self.best = self.model.best_iteration if patience and self.model.best_iteration > 0 else self.rounds

    def dump(self):
        return self.model.model_to_string(num_iteration=-1).encode()

    def load(self, raw):
        self.model = library(self.name).Booster(model_str=raw.decode(), params={"num_threads": self.settings.threads})

    def _predict(self, x, rounds):
        return self.model.predict(x, num_iteration=rounds)

    def _importance(self):
        return dict(zip(self.model.feature_name(), self.model.feature_importance("gain")))


class CatBoost(Booster):
    name = "catboost"
    categories = "codes"
    stoppable = False  # no callback (see above): kit.train.boosting plans its rounds from a timed probe

    def params(self, rounds: int) -> dict:
        t, s = self.task, self.settings
        loss, metric = {"binary": ("Logloss", "Logloss"), "multiclass": ("MultiClass", "MultiClass"),
                        "regression": ("MAE", "MAE") if t.l1 else ("RMSE", "RMSE")}[t.kind]
        p = {"loss_function": loss, "eval_metric": metric, "iterations": rounds, "learning_rate": s.learning_rate,
             "depth": s.max_depth, "bootstrap_type": "Bernoulli", "subsample": s.subsample, "random_seed": s.seed,
             "thread_count": s.threads, "allow_writing_files": False, "verbose": 0,
             "use_best_model": False}  # every round is kept: prediction stops at the best
        if s.early_stopping_rounds:
            p.update(od_type="Iter", od_wait=s.early_stopping_rounds)
        if s.device.startswith("cuda"):
            p.update(task_type="GPU", devices=s.device.split(":")[-1] if ":" in s.device else "0")
        return {**p, "class_names": list(range(t.classes))} if t.kind == "multiclass" else p

    def fit(self, x, y, xv, yv, rounds, clock):
        cb = library(self.name)
        self.model = cb.CatBoost(self.params(rounds))
        cats = [i for i, c in enumerate(x.dtypes) if pd.api.types.is_integer_dtype(c)]
        self.model.fit(cb.Pool(x, y, cat_features=cats), eval_set=cb.Pool(xv, yv, cat_features=cats))
        evals = self.model.get_evals_result()
        metric = self.params(rounds)["eval_metric"]
        train = evals.get("learn", {}).get(metric, [])  # CatBoost computes the AUC on the validation rows only
        self.curves = Curves(metric, list(train), list(evals["validation"][metric]))
        self.rounds = self.model.tree_count_
        self.best = self.model.get_best_iteration() + 1 if self.settings.early_stopping_rounds else self.rounds

    def dump(self):
        with tempfile.TemporaryDirectory() as folder:  # CatBoost writes its format to files only
            path = os.path.join(folder, "model.cbm")
            self.model.save_model(path)
            with open(path, "rb") as f:
                return f.read()

    def load(self, raw):
        self.model = library(self.name).CatBoost()
        self.model.load_model(blob=raw)

    def _predict(self, x, rounds):
        cb = library(self.name)
        cats = [i for i, c in enumerate(x.dtypes) if pd.api.types.is_integer_dtype(c)]
        kind = "RawFormulaVal" if self.task.kind == "regression" else "Probability"
        out = self.model.predict(cb.Pool(x, cat_features=cats), prediction_type=kind, ntree_end=rounds,
                                 thread_count=self.settings.threads)
        return out[:, 1] if self.task.kind == "binary" else out

    def _importance(self):
        return dict(zip(self.model.feature_names_, self.model.get_feature_importance()))
