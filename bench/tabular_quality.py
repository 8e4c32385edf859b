"""`make quality`'s tabular rows: kit's default for each model against the plain call a competitor writes, on
tables that ship with scikit-learn, on the same folds, side by side.

  breast cancer  569 rows x 30 numbers, malignant or benign: auc
  wine           178 rows x 13 numbers, three cultivars: auc of the class probabilities (one against the rest)
  diabetes       442 rows x 10 numbers, a year's disease progression: rmse
  titanic        1,309 passengers (OpenML 40945): class, sex, age, siblings and parents aboard (counts of few
                 values), fare, port, and three strings (name: every value once; ticket: 930 values; cabin: 186 in a
                 fifth of the rows), gaps in age, cabin and port; who survived: accuracy (a rule "women survive" scores
                 0.784 on the held-out rows)
  penguins       333 of Palmer's penguins whose sex is known (OpenML 42585): species and island (strings), four
                 measurements with gaps; male or female: auc

The last two are small mixed tables as OpenML serves them; scikit-learn's tests ship both (its fetch_openml's
fixtures), so they are read from there, with no download. Only kit's default model (xgboost) runs on them, against
the plain call issue 42 compared it with: XGBClassifier(n_estimators=1000, enable_categorical=True,
early_stopping_rounds=50) on the table as read, its strings as pandas categories. Titanic leaves out boat and body
(who was in a lifeboat, whose body was found: the answer) and home.dest, which Kaggle's Titanic does not have.

Each table's rows are split once: 70% to train on (the competition's train.csv), 30% held out (test.csv,
whose answers only this file knows). kit trains its default for each model through the built notebook
(`kit run`, 5 folds, nothing else set). The plain call is the library's estimator with its own defaults,
1,000 rounds and early stopping after 50 on the validation rows, on each of the same 5 folds
(kit.train.cv.make_folds with kit's seed), its folds' predictions averaged as kit averages its own; the plain
network is two hidden layers of 256 ReLUs on standardised columns, Adam at 1e-3 with a cosine schedule for
kit's 40 epochs, the last epoch kept. Both predict the held-out rows and are scored there. One thread each.
Wine is scored by AUC, not log loss: on its 53 held-out rows one confident mistake decides the log loss
(kit's xgboost and lightgbm beat the plain call by 40% and 60% there, its catboost and mlp lost by 25% and
130%, each by a row or two).
"""
from __future__ import annotations

import gzip
import io
import math
import re
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from sklearn import datasets
from sklearn import metrics as skm
from torch import nn

from kit.train.cv import make_folds

MODELS = ("xgboost", "lightgbm", "catboost", "mlp")
MIXED_MODELS = ("xgboost",)  # kit's default, on the small mixed tables
OPENML = Path(datasets.__file__).parent / "tests" / "data" / "openml"  # fetch_openml's fixtures: whole tables
FOLDS, SEED, HELD_OUT = 5, 42, 0.3
ROUNDS, PATIENCE = 1000, 50  # the plain call's
EPOCHS = 40  # kit's mlp default, which the plain loop runs too


def tables() -> dict[str, tuple[pd.DataFrame, np.ndarray, str]]:
    """{name: (features, target, metric)} from scikit-learn's bundled data (no download)."""
    out = {}
    for name, load, metric in (("breast cancer", datasets.load_breast_cancer, "auc"),
                               ("wine", datasets.load_wine, "auc"), ("diabetes", datasets.load_diabetes, "rmse")):
        bunch = load(as_frame=True)
        x = bunch.data.rename(columns=lambda c: c.replace(" ", "_"))
        out[name] = (x, bunch.target.to_numpy(), metric)
    return out


def mixed_tables() -> dict[str, tuple[pd.DataFrame, np.ndarray, str]]:
    """{name: (features, target, metric)}: Titanic and the penguins, read from scikit-learn's copies of OpenML's files."""
    titanic = arff(OPENML / "id_40945" / "data-v1-dl-16826755.arff.gz")
    penguins = arff(OPENML / "id_42585" / "data-v1-dl-21854866.arff.gz")
    penguins = penguins[penguins["sex"].isin(["MALE", "FEMALE"])].reset_index(drop=True)  # 11 unknown, 1 "_"
    return {"titanic": (titanic.drop(columns=["survived", "boat", "body", "home.dest"]), titanic["survived"].to_numpy(),
                        "accuracy"),
            "penguins": (penguins.drop(columns="sex"), (penguins["sex"] == "MALE").to_numpy(np.int64), "auc")}


def arff(path: Path) -> pd.DataFrame:
    """An OpenML ARFF file's table: its attributes' names, then its data as CSV ('?' missing)."""
    if not path.exists():
        raise SystemExit(f"quality: {path} is missing: this scikit-learn ships no copy of the OpenML table the tabular "
                         "rows read (its tests' fixtures)")
    with gzip.open(path, "rt") as f:
        text = f.read()
    head, body = re.split(r"^@data\s*$", text, maxsplit=1, flags=re.IGNORECASE | re.MULTILINE)
    names = [m.group(1) for m in re.finditer(r"^@attribute\s+'?([^'\s]+)'?", head, re.IGNORECASE | re.MULTILINE)]
    return pd.read_csv(io.StringIO(body), header=None, names=names, na_values="?", quotechar='"', escapechar="\\")


def write_competition(folder: Path, x: pd.DataFrame, y: np.ndarray, metric: str) -> tuple[np.ndarray, np.ndarray, str]:
    """train.csv, test.csv, sample_submission.csv and a config in `folder`; (training rows, held-out rows, config)."""
    order = np.random.default_rng(0).permutation(len(y))
    held, kept = np.sort(order[: round(HELD_OUT * len(y))]), np.sort(order[round(HELD_OUT * len(y)) :])
    folder.mkdir(parents=True)
    frame = x.assign(id=np.arange(len(y)), target=y)
    frame.iloc[kept].to_csv(folder / "train.csv", index=False)
    frame.iloc[held].drop(columns="target").to_csv(folder / "test.csv", index=False)
    sample = pd.DataFrame({"id": frame["id"].iloc[held]})
    if len(np.unique(y)) > 2 and metric != "rmse":  # a column per class: their probabilities
        for c in np.unique(y):
            sample[str(c)] = 1 / len(np.unique(y))
    else:
        sample["target"] = 0 if metric == "accuracy" else 0.0
    sample.to_csv(folder / "sample_submission.csv", index=False)
    config = folder / "competition.toml"
    config.write_text(f'[competition]\nslug = "sklearn-{folder.name}"\ntemplate = "tabular"\nmetric = "{metric}"\n\n'
                      '[data]\ntrain = "train.csv"\ntest = "test.csv"\nid_column = "id"\ntarget_column = "target"\n\n'
                      f'[kernel]\ntitle = "Quality {folder.name}"\n')
    return kept, held, str(config)


def score(metric: str, y: np.ndarray, pred: np.ndarray) -> float:
    """`pred`: probabilities (of the positive class, or of each), values, or for accuracy kit's labels."""
    if metric == "accuracy":
        return float(((pred > 0.5) == y).mean())
    if metric == "auc":
        return float(skm.roc_auc_score(y, pred, multi_class="ovr") if pred.ndim == 2 else skm.roc_auc_score(y, pred))
    return float(np.sqrt(np.mean((pred - y) ** 2)))


def kit_prediction(submission: pd.DataFrame) -> np.ndarray:
    """The submission's probabilities of the classes (a column each) or of the positive one, or its values."""
    columns = [c for c in submission.columns if c != "id"]
    return submission[columns].to_numpy() if len(columns) > 1 else submission[columns[0]].to_numpy()


# -- the plain calls ---------------------------------------------------------------------------------------------
def plain_booster(name: str, metric: str) -> Callable:
    """fit(x, y, xv, yv) -> predict(x): the library's sklearn estimator, its defaults, 1,000 rounds, patience 50."""
    def fit(x, y, xv, yv):
        regression = metric == "rmse"
        if name == "xgboost":
            import xgboost as xgb

            model = (xgb.XGBRegressor if regression else xgb.XGBClassifier)(n_estimators=ROUNDS, early_stopping_rounds=PATIENCE,
                                                                           enable_categorical=True, n_jobs=1)
            model.fit(x, y, eval_set=[(xv, yv)], verbose=False)
        elif name == "lightgbm":
            import lightgbm as lgb

            model = (lgb.LGBMRegressor if regression else lgb.LGBMClassifier)(n_estimators=ROUNDS, n_jobs=1, verbose=-1)
            model.fit(x, y, eval_set=[(xv, yv)], callbacks=[lgb.early_stopping(PATIENCE, verbose=False)])
        else:
            import catboost as cb

            model = (cb.CatBoostRegressor if regression else cb.CatBoostClassifier)(
                iterations=ROUNDS, early_stopping_rounds=PATIENCE, thread_count=1, verbose=0, allow_writing_files=False)
            model.fit(x, y, eval_set=(xv, yv))
        if regression:
            return model.predict
        return lambda rows: positive(model.predict_proba(rows))
    return fit


def positive(prob: np.ndarray) -> np.ndarray:
    """Two classes: the second's probability (what an AUC of one column takes); more: all of them."""
    return prob[:, 1] if prob.shape[1] == 2 else prob


def plain_mlp(metric: str) -> Callable:
    """fit(x, y, xv, yv) -> predict(x): standardised columns, 2 x 256 ReLU, Adam 1e-3, cosine, batch 32, the last epoch."""
    def fit(x, y, xv, yv):
        torch.manual_seed(0)
        mean, std = x.mean(0), x.std(0) + 1e-9
        xs = torch.tensor(((x - mean) / std).to_numpy(np.float32))
        regression = metric == "rmse"
        classes = 1 if regression else int(y.max()) + 1
        target = torch.tensor((y - y.mean()) / y.std(), dtype=torch.float32) if regression else torch.tensor(y)
        model = nn.Sequential(nn.Linear(xs.shape[1], 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, classes))
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, EPOCHS * math.ceil(len(xs) / 32))
        loss_of = (lambda out, t: ((out[:, 0] - t) ** 2).mean()) if regression else nn.functional.cross_entropy
        for _ in range(EPOCHS):
            for idx in torch.randperm(len(xs)).split(32):
                loss = loss_of(model(xs[idx]), target[idx])
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                schedule.step()

        @torch.no_grad()
        def predict(rows):
            out = model(torch.tensor(((rows - mean) / std).to_numpy(np.float32)))
            if regression:
                return out[:, 0].numpy() * y.std() + y.mean()
            return positive(out.softmax(-1).numpy())
        return predict
    return fit


def plain(name: str, x: pd.DataFrame, y: np.ndarray, held: pd.DataFrame, metric: str) -> np.ndarray:
    """The plain call on each of kit's folds of the training rows, its folds' predictions of `held` averaged."""
    classes = y.astype(np.int64) if metric != "rmse" else None
    fit = plain_mlp(metric) if name == "mlp" else plain_booster(name, metric)
    x, held = x.copy(), held.copy()
    for column in x.columns[[not pd.api.types.is_numeric_dtype(t) for t in x.dtypes]]:  # strings: pandas categories
        levels = pd.CategoricalDtype(sorted(x[column].dropna().unique()))
        x[column], held[column] = x[column].astype(levels), held[column].astype(levels)
    preds = [fit(x.iloc[t], y[t], x.iloc[v], y[v])(held) for t, v in make_folds(len(y), FOLDS, SEED, classes=classes)]
    return np.mean(preds, axis=0)


def rows(work: Path, run_kit: Callable, row: Callable, models: tuple[str, ...] = MODELS,
         sources: tuple[str, ...] = ("sklearn", "openml")) -> list:
    """One row per table and model: `run_kit(config, data, out, params)` runs kit's notebook (quality.run_kit),
    `row(...)` makes the row (quality.Row); `sources`: scikit-learn's tables, the small mixed ones, or both."""
    torch.set_num_threads(1)
    out = []
    tabled = [(name, table, models, "sklearn") for name, table in tables().items()] if "sklearn" in sources else []
    if "openml" in sources:
        mixed = tuple(m for m in MIXED_MODELS if m in models)
        tabled += [(name, table, mixed, "openml") for name, table in mixed_tables().items()]
    for name, (x, y, metric), models_here, source in tabled:
        folder = work / f"{source}-{name.replace(' ', '-')}"
        kept, held, config = write_competition(folder, x, y, metric)
        for model in models_here:
            submission, kit_s = run_kit(config, folder, work / f"kit-{folder.name}-{model}",
                                        dict(model_name=model, folds=FOLDS, device="cpu"))
            t0 = time.time()
            plain_pred = plain(model, x.iloc[kept].reset_index(drop=True), y[kept], x.iloc[held], metric)
            out.append(row(f"{name} ({source})", f"tabular {model}", metric,
                           score(metric, y[held], kit_prediction(submission)), score(metric, y[held], plain_pred),
                           kit_s, time.time() - t0))
    return out
