"""Smoke data for the tabular template: five competitions in their exact public layouts (kit's notes on
MLE-bench's preparations), small, with targets that follow their features so a smoke model has something to
learn; any other slug gets a generic table of the config's columns."""
from __future__ import annotations

import string
from pathlib import Path

import numpy as np
import pandas as pd

from kit.spec import Spec


def make_dataset(spec: Spec, folder: Path, seed: int = 0) -> None:
    makers = {"tabular-playground-series-dec-2021": forest_cover, "tabular-playground-series-may-2022": may_2022,
              "nomad2018-predict-transparent-conductors": conductors, "spaceship-titanic": spaceship,
              "new-york-city-taxi-fare-prediction": taxi}
    folder.mkdir(parents=True)
    makers.get(spec.slug, generic)(spec, folder, np.random.default_rng(seed))


def write(folder: Path, spec: Spec, train: pd.DataFrame, test: pd.DataFrame, sample: pd.DataFrame) -> None:
    train.to_csv(folder / spec.train, index=False)
    test.to_csv(folder / spec.test, index=False)
    sample.to_csv(folder / spec.sample_submission, index=False)


def split(frame: pd.DataFrame, test: int, target: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    return frame.iloc[:-test].reset_index(drop=True), frame.iloc[-test:].drop(columns=target).reset_index(drop=True)


def forest_cover(spec: Spec, folder: Path, rng: np.random.Generator, n: int = 700, test: int = 150) -> None:
    """tabular-playground-series-dec-2021: Id, ten terrain numbers, Wilderness_Area1-4 and Soil_Type1-40 (0/1),
    Cover_Type 1 to 7 (class 5 in one training row, as in the real data); accuracy. The cover follows the
    elevation's band and the wilderness area."""
    elevation = rng.uniform(1800, 3800, n)
    frame = pd.DataFrame({"Id": np.arange(n), "Elevation": elevation.round(), "Aspect": rng.integers(0, 360, n),
                          "Slope": rng.integers(0, 50, n)})
    for name in ("Horizontal_Distance_To_Hydrology", "Vertical_Distance_To_Hydrology", "Horizontal_Distance_To_Roadways",
                 "Hillshade_9am", "Hillshade_Noon", "Hillshade_3pm", "Horizontal_Distance_To_Fire_Points"):
        frame[name] = rng.integers(-50, 4000, n)
    area = rng.integers(0, 4, n)
    for k in range(4):
        frame[f"Wilderness_Area{k + 1}"] = (area == k).astype(int)
    soil = rng.integers(0, 40, n)
    for k in range(40):
        frame[f"Soil_Type{k + 1}"] = (soil == k).astype(int)
    band = np.digitize(elevation + rng.normal(0, 60, n), [2300, 2600, 2900, 3200, 3500])  # 0..5
    cover = np.array([3, 6, 2, 1, 7, 7])[band]
    cover = np.where((area == 3) & (cover == 2), 4, cover)
    cover[np.flatnonzero(cover == 1)[0]] = 5  # the class of one row
    frame["Cover_Type"] = cover
    train, tested = split(frame, test, ["Cover_Type"])
    write(folder, spec, train, tested, pd.DataFrame({"Id": tested["Id"], "Cover_Type": 2}))


def may_2022(spec: Spec, folder: Path, rng: np.random.Generator, n: int = 700, test: int = 150) -> None:
    """tabular-playground-series-may-2022: id, f_00-f_30 (f_07-f_18 and f_29-f_30 integers, f_27 a string of ten
    capitals), target 0/1; auc. Ids run on from train into test. The target follows f_00 + f_21, the count of
    'A' in f_27 and f_30."""
    frame = pd.DataFrame({"id": np.arange(n)})
    for k in range(31):
        name = f"f_{k:02d}"
        if 7 <= k <= 18:
            frame[name] = rng.integers(0, 16, n)
        elif k == 27:
            frame[name] = ["".join(rng.choice(list(string.ascii_uppercase[:20]), 10)) for _ in range(n)]
        elif k == 29:
            frame[name] = rng.integers(0, 2, n)
        elif k == 30:
            frame[name] = rng.integers(0, 3, n)
        else:
            frame[name] = rng.normal(0, 1.5, n).round(6)
    logit = frame["f_00"] + frame["f_21"] + 1.5 * (frame["f_27"].str.count("A") - 0.5) + (frame["f_30"] == 2) - 0.5
    frame["target"] = (rng.random(n) < 1 / (1 + np.exp(-2 * logit))).astype(int)
    train, tested = split(frame, test, ["target"])
    write(folder, spec, train, tested, pd.DataFrame({"id": tested["id"], "target": 0.5}))


def conductors(spec: Spec, folder: Path, rng: np.random.Generator, n: int = 500, test: int = 80) -> None:
    """nomad2018-predict-transparent-conductors: train.csv and test.csv (ids from 1 in each), two targets scored by
    the mean column-wise RMSLE, sample id,formation_energy_ev_natom,bandgap_energy_ev, and each id's
    train/<id>/geometry.xyz and test/<id>/geometry.xyz. The energies follow the composition."""
    al, ga = rng.dirichlet([1, 1, 1], n).T[:2]
    indium = 1 - al - ga
    group = rng.choice([12, 33, 167, 194, 206, 227], n)
    frame = pd.DataFrame({"id": 0, "spacegroup": group, "number_of_total_atoms": rng.choice([10, 20, 30, 40, 60, 80], n),
                          "percent_atom_al": al.round(4), "percent_atom_ga": ga.round(4), "percent_atom_in": indium.round(4)})
    for k, (low, high) in enumerate([(3, 25), (3, 25), (5, 25)], 1):
        frame[f"lattice_vector_{k}_ang"] = rng.uniform(low, high, n).round(4)
    for name in ("alpha", "beta", "gamma"):
        frame[f"lattice_angle_{name}_degree"] = rng.uniform(85, 120, n).round(4)
    frame["formation_energy_ev_natom"] = (0.05 + 0.25 * al * (1 - al) + 0.1 * (group == 206) + rng.gamma(2, 0.01, n)).round(4)
    frame["bandgap_energy_ev"] = (0.4 + 4.5 * al + 2.0 * ga + rng.normal(0, 0.15, n)).clip(0.0001).round(4)
    targets = ["formation_energy_ev_natom", "bandgap_energy_ev"]
    train, tested = split(frame, test, targets)
    for table, name in ((train, "train"), (tested, "test")):
        table["id"] = np.arange(1, len(table) + 1)
        for i in table["id"]:
            atoms = folder / name / str(i)
            atoms.mkdir(parents=True)
            (atoms / "geometry.xyz").write_text("#=======================================================\n"
                                                "lattice_vector 9.95 0.0 0.0 \nlattice_vector 0.0 8.5 0.0 \n"
                                                "lattice_vector 0.0 0.0 9.1 \natom 0.0 0.0 0.0 Ga\n")
    write(folder, spec, train, tested, pd.DataFrame({"id": tested["id"], targets[0]: 0.1779, targets[1]: 1.8892}))


def spaceship(spec: Spec, folder: Path, rng: np.random.Generator, n: int = 700, test: int = 150) -> None:
    """spaceship-titanic: PassengerId gggg_pp, HomePlanet, CryoSleep and VIP (True/False or blank), Cabin deck/num/side,
    Destination, Age, five spends, Name, Transported (True/False); blanks in most columns; accuracy. Sleepers and
    Europans are transported, big spenders are not."""
    group = np.sort(rng.integers(1, n // 2, n))
    planet = rng.choice(["Earth", "Europa", "Mars"], n, p=[0.55, 0.25, 0.2])
    sleep = rng.random(n) < 0.35
    spends = {c: np.where(sleep, 0.0, rng.exponential(300, n).round()) for c in
              ("RoomService", "FoodCourt", "ShoppingMall", "Spa", "VRDeck")}
    total = sum(spends.values())
    logit = 2.5 * sleep + 1.0 * (planet == "Europa") - total / 700 + 0.3
    member = pd.Series(group).groupby(group).cumcount().to_numpy() + 1  # each traveller's number in their group
    frame = pd.DataFrame({"PassengerId": [f"{g:04d}_{k:02d}" for g, k in zip(group, member)], "HomePlanet": planet,
                          "CryoSleep": sleep, "Cabin": [f"{rng.choice(list('ABCDEFG'))}/{rng.integers(0, 1800)}/"
                                                         f"{rng.choice(['P', 'S'])}" for _ in range(n)],
                          "Destination": rng.choice(["TRAPPIST-1e", "PSO J318.5-22", "55 Cancri e"], n),
                          "Age": rng.integers(0, 80, n).astype(float), "VIP": rng.random(n) < 0.03, **spends,
                          "Name": [f"{rng.choice(['Ann', 'Bo', 'Cy', 'Dee'])} {rng.choice(list(string.ascii_uppercase))}"
                                   f"{rng.integers(1000, 99999)}" for _ in range(n)],
                          "Transported": rng.random(n) < 1 / (1 + np.exp(-logit))})
    for column in frame.columns.drop(["PassengerId", "Transported"]):
        frame[column] = frame[column].astype(object).where(rng.random(n) > 0.02, None)  # blanks, ~2% a column
    train, tested = split(frame, test, ["Transported"])
    write(folder, spec, train, tested, pd.DataFrame({"PassengerId": tested["PassengerId"], "Transported": False}))


def taxi(spec: Spec, folder: Path, rng: np.random.Generator, n: int = 600, test: int = 100) -> None:
    """new-york-city-taxi-fare-prediction: labels.csv (the training table: key, fare_amount, pickup_datetime, four
    coordinates, passenger_count), test.csv without fare_amount, sample key,fare_amount (11.35); rmse. The fare
    is the meter's: a base, the distance from a midtown pickup, a night surcharge; a few rides have no drop-off
    or sit at (0, 0)."""
    stamps = pd.Timestamp("2009-01-01") + pd.to_timedelta(np.sort(rng.integers(0, 6 * 365 * 86400, n)), unit="s")
    lon, lat = rng.normal(-73.985, 0.004, n), rng.normal(40.758, 0.004, n)  # most rides start in midtown
    dlon, dlat = lon + rng.normal(0, 0.04, n), lat + rng.normal(0, 0.04, n)
    km = np.hypot((dlon - lon) * 84.0, (dlat - lat) * 111.0)
    night = (stamps.hour >= 20) | (stamps.hour < 6)
    fare = (2.5 + 1.56 * km + 0.5 * night + rng.normal(0, 0.4, n)).clip(2.5).round(2)
    frame = pd.DataFrame({"key": [f"{s:%Y-%m-%d %H:%M:%S}.{k:07d}" for k, s in enumerate(stamps, 1)], "fare_amount": fare,
                          "pickup_datetime": [f"{s:%Y-%m-%d %H:%M:%S} UTC" for s in stamps], "pickup_longitude": lon.round(6),
                          "pickup_latitude": lat.round(6), "dropoff_longitude": dlon.round(6), "dropoff_latitude": dlat.round(6),
                          "passenger_count": rng.choice([1, 1, 1, 2, 3, 5, 6], n)})
    frame.loc[rng.choice(n, 3, replace=False), ["dropoff_longitude", "dropoff_latitude"]] = np.nan
    frame.loc[rng.choice(n, 3, replace=False), ["pickup_longitude", "pickup_latitude"]] = 0.0
    order = rng.permutation(n)
    frame = frame.iloc[order].reset_index(drop=True)
    train, tested = split(frame, test, ["fare_amount"])
    write(folder, spec, train, tested, pd.DataFrame({"key": tested["key"], "fare_amount": 11.35}))


def generic(spec: Spec, folder: Path, rng: np.random.Generator, n: int = 400, test: int = 100) -> None:
    """Any other tabular config: its features (or four numbers and a category) and its target column, a class
    under a class metric, else a value, following the first feature."""
    names = list(spec.features) or ["x0", "x1", "x2", "kind"]
    frame = pd.DataFrame({spec.id_column or "id": np.arange(n)})
    for name in names:
        frame[name] = rng.choice(["a", "b", "c"], n) if name in spec.categorical or name == "kind" else rng.normal(0, 1, n)
    first = pd.to_numeric(frame[names[0]], errors="coerce").fillna(0.0).to_numpy() + rng.normal(0, 0.3, n)
    values = spec.metric in ("mae", "rmse", "rmsle", "pearson", "spearman")
    frame[spec.target_column] = np.exp(first) if values else np.where(first > 0, "yes", "no")
    if spec.group_column:  # rows in groups, as the config's folds read them
        frame[spec.group_column] = [f"group{j % 8}" for j in range(n)]  # more groups than the smoke's folds
    train, tested = split(frame, test, [spec.target_column])
    fill = 0.0 if values else (0.5 if spec.metric in ("auc", "log_loss") else "no")
    sample = pd.DataFrame({spec.id_column or "id": tested[spec.id_column or "id"], spec.target_column: fill})
    write(folder, spec, train, tested, sample)
