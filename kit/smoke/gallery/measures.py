"""The gallery's competitions whose rows are built from more than one table: champs' atom pairs, whose atoms are rows
of structures.csv, and osic's patients, whose test rows are the sample's Patient_Week ids read against each patient's
first visit."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

# champs' eight coupling types: (bonds apart, the second atom's element) -> a typical constant, in Hz
COUPLINGS = {"1JHC": 94.0, "1JHN": 47.0, "2JHH": -10.0, "2JHC": -1.0, "2JHN": 3.0, "3JHH": 4.5, "3JHC": 3.0, "3JHN": 1.0}
ELEMENTS = np.array(["C", "N", "O"])


def champs(folder: Path, seed: int = 0, molecules: int = 70) -> None:
    """MLE-bench's split of champs-scalar-coupling: whole molecules held out (a tenth), train.csv id, molecule_name,
    atom_index_0 (an H), atom_index_1, type, scalar_coupling_constant; test.csv without the constant; sample_submission
    id,scalar_coupling_constant=0; structures.csv molecule_name, atom_index, atom, x, y, z and structures/<name>.xyz,
    and the five tables of extra quantities (dipoles, shielding tensors, Mulliken charges, energies, the constant's
    four contributions), all of them of the training molecules only, as its prepare.py filters them."""
    rng = np.random.default_rng(seed)
    atoms, pairs = [], []
    for m in range(molecules):
        name = f"dsgdb9nsd_{m * 7 + 1:06d}"
        heavy = rng.integers(3, 7)
        elements = np.concatenate([ELEMENTS[rng.choice(3, heavy, p=[0.7, 0.15, 0.15])], ["H"] * int(rng.integers(3, 8))])
        xyz = rng.normal(0, 1.2, (len(elements), 3))
        atoms += [(name, i, e, *xyz[i].round(8)) for i, e in enumerate(elements)]
        for i in np.flatnonzero(elements == "H"):
            for j in range(len(elements)):
                if j == i or elements[j] == "O":
                    continue
                d = float(np.linalg.norm(xyz[i] - xyz[j]))
                kind = f"{1 if d < 1.2 else 2 if d < 2.0 else 3}JH{elements[j]}"
                if kind in COUPLINGS:  # the constant follows the type and falls off with the distance
                    pairs.append((name, i, j, kind, COUPLINGS[kind] * (1 + 0.3 * (1.5 - d)) + rng.normal(0, 0.5)))
    table = pd.DataFrame(pairs, columns=["molecule_name", "atom_index_0", "atom_index_1", "type", "scalar_coupling_constant"])
    table.insert(0, "id", np.arange(len(table)))
    names = table["molecule_name"].unique()
    held = set(rng.permutation(names)[: max(2, len(names) // 10)])
    order = [n for n in rng.permutation(names) if n not in held] + [n for n in rng.permutation(names) if n in held]
    table = pd.concat([table[table["molecule_name"] == n] for n in order], ignore_index=True)
    is_test = table["molecule_name"].isin(held)
    train, test = table[~is_test], table[is_test].drop(columns=["scalar_coupling_constant"])
    train.to_csv(folder / "train.csv", index=False)
    test.to_csv(folder / "test.csv", index=False)
    sample = test[["id"]].assign(scalar_coupling_constant=0)
    sample.to_csv(folder / "sample_submission.csv", index=False)
    structures = pd.DataFrame(atoms, columns=["molecule_name", "atom_index", "atom", "x", "y", "z"])
    structures = structures[structures["molecule_name"].isin(train["molecule_name"])]
    structures.to_csv(folder / "structures.csv", index=False)
    _extras(folder, train, structures, rng)


def _extras(folder: Path, train: pd.DataFrame, structures: pd.DataFrame, rng: np.random.Generator) -> None:
    """The extra tables and the .xyz files of champs' training molecules (kit reads none of them)."""
    molecules = train["molecule_name"].unique()
    pd.DataFrame({"molecule_name": molecules, **{a: rng.normal(0, 1, len(molecules)).round(4) for a in "XYZ"}}).to_csv(
        folder / "dipole_moments.csv", index=False)
    pd.DataFrame({"molecule_name": molecules, "potential_energy": rng.normal(-400, 40, len(molecules)).round(4)}).to_csv(
        folder / "potential_energy.csv", index=False)
    keys = structures[["molecule_name", "atom_index"]].reset_index(drop=True)
    tensor = [a + b for b in "XYZ" for a in "XYZ"]
    keys.assign(**{t: rng.normal(0, 50, len(keys)).round(4) for t in tensor}).to_csv(
        folder / "magnetic_shielding_tensors.csv", index=False)
    keys.assign(mulliken_charge=rng.normal(0, 0.2, len(keys)).round(6)).to_csv(folder / "mulliken_charges.csv", index=False)
    parts = train[["molecule_name", "atom_index_0", "atom_index_1", "type"]]
    share = train["scalar_coupling_constant"].to_numpy()
    parts.assign(fc=(0.95 * share).round(5), sd=(0.01 * share).round(5), pso=(0.02 * share).round(5),
                 dso=(0.02 * share).round(5)).to_csv(folder / "scalar_coupling_contributions.csv", index=False)
    (folder / "structures").mkdir()
    for name, atoms in structures.groupby("molecule_name", sort=False):
        lines = [str(len(atoms)), ""] + [f"{a} {x:.10f} {y:.10f} {z:.10f}" for a, x, y, z in
                                         atoms[["atom", "x", "y", "z"]].itertuples(index=False)]
        (folder / "structures" / f"{name}.xyz").write_text("\n".join(lines) + "\n")


SMOKING = ["Ex-smoker", "Never smoked", "Currently smokes"]


def osic(folder: Path, seed: int = 0, patients: int = 66) -> None:
    """MLE-bench's split of osic-pulmonary-fibrosis-progression: a tenth of the patients held out; train.csv Patient,
    Weeks, FVC, Percent, Age, Sex, SmokingStatus (every visit); test.csv the same columns, each held-out patient's
    first visit; sample_submission.csv Patient_Week (every held-out patient, every week from the held-out visits'
    first to their last), FVC=2000, Confidence=100; train/<Patient>/ and test/<Patient>/ with the CT slices (.dcm).
    A patient's FVC falls along a line of their own from their first visit, by their age and smoking."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(patients):
        patient = "ID" + "".join(map(str, rng.integers(0, 10, 23)))
        age, sex, smoking = int(rng.integers(49, 89)), rng.choice(["Male", "Female"], p=[0.8, 0.2]), rng.choice(SMOKING)
        start = float(rng.normal(3400 if sex == "Male" else 2400, 500))
        slope = -rng.gamma(2.0, 3.0) * (1.5 if smoking == "Currently smokes" else 1.0)  # ml a week
        expected = (4500 if sex == "Male" else 3300) - 15 * (age - 50)
        weeks = np.sort(rng.choice(np.arange(-5, 134), int(rng.integers(6, 11)), replace=False))
        for w in weeks:
            fvc = int(round(start + slope * (w - weeks[0]) + rng.normal(0, 90)))
            rows.append((patient, int(w), fvc, 100.0 * fvc / expected, age, sex, smoking))
    table = pd.DataFrame(rows, columns=["Patient", "Weeks", "FVC", "Percent", "Age", "Sex", "SmokingStatus"])
    names = table["Patient"].unique()
    held = list(rng.permutation(names)[: max(2, len(names) // 10)])
    train = pd.concat([table[table["Patient"] == n] for n in names if n not in held])
    test = pd.concat([table[table["Patient"] == n] for n in held])
    train.to_csv(folder / "train.csv", index=False)
    test.sort_values(by="Weeks").groupby("Patient").first().reset_index().to_csv(folder / "test.csv", index=False)
    weeks = range(int(test["Weeks"].min()), int(test["Weeks"].max()) + 1)
    ids = [f"{n}_{w}" for n in test["Patient"].unique() for w in weeks]
    pd.DataFrame({"Patient_Week": ids, "FVC": 2000, "Confidence": 100}).to_csv(folder / "sample_submission.csv", index=False)
    for split, kept in (("train", train), ("test", test)):
        for patient in kept["Patient"].unique():
            (folder / split / patient).mkdir(parents=True)
            (folder / split / patient / "1.dcm").write_bytes(b"\0" * 128 + b"DICM")  # kit reads no CT slice
