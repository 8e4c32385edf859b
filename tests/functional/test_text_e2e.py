"""The text template end to end: the essay-scoring config's smoke pair (training kernel, then the inference
kernel on its output) with a tiny encoder built locally, a run that opens no network connection, and the bad
inputs `kit run` stops in one line."""
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from test_offline_e2e import DeadProxy

from kit import cli, config, smoke
from kit.smoke.text import make_model_folder

pytestmark = pytest.mark.e2e
ESSAYS = "learning-agency-lab-automated-essay-scoring-2"


def test_essay_scores_beat_the_training_mean_and_the_inference_kernel_agrees(tmp_path):
    result = smoke.run(ESSAYS, root=tmp_path)
    assert result.metric == "qwk" and result.score > result.baseline + 0.3  # the mean is one score: kappa 0
    assert result.inference is not None  # the pair's submissions agree to 1e-4 (smoke.run checks it)
    sub = pd.read_csv(result.submission)
    assert list(sub.columns) == ["essay_id", "score"] and set(sub["score"]) <= set(range(1, 7))
    assert sub["score"].nunique() > 1  # whole scores, and not one score for every essay
    log = (result.submission.parent / "kit.log").read_text()
    assert "target         scores 1 to 6, regressed and rounded, metric qwk" in log
    assert "/models/kit/kit-tiny-encoder/transformers/default/1" in log  # found in a Kaggle model's layout by name
    inferred = (result.inference.parent / "kit.log").read_text()
    assert "predict mode" in inferred and "fold 1/2 epoch" not in inferred  # nothing trains there


def essays_and_model(tmp_path) -> tuple[Path, Path]:
    cfg = config.load(ESSAYS)
    folder = tmp_path / "input" / cfg.spec.slug
    smoke.make_dataset(cfg.spec, folder, seed=2)
    model = make_model_folder(cfg.spec, folder, tmp_path / "input", {"model_path": "tiny"}, seed=2)
    return folder, model


def kit_run_args(tmp_path, comp, folder, model, *params) -> list[str]:
    cfg = config.load(comp)
    values = {**cfg.smoke, "model_path": str(model), "epochs": 1, **dict(p.split("=", 1) for p in params)}
    args = ["run", comp, "--data", str(folder), "--output", str(tmp_path / "out")]
    return args + [a for k, v in values.items() for a in ("-p", f"{k}={str(v).lower() if isinstance(v, bool) else v}")]


def test_a_text_kernel_opens_no_network_connection(tmp_path):
    """With the internet on in the config (so the runtime cell does not set HF_HUB_OFFLINE) and proxies that
    answer nothing, the kernel loads its tokenizer and encoder from the folder alone."""
    folder, model = essays_and_model(tmp_path)
    online = tmp_path / "online.toml"
    online.write_text(config.resolve(ESSAYS).read_text().replace("internet = false", "internet = true"))
    proxy = DeadProxy()
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "NO_PROXY", "no_proxy")}
    env.update({k: proxy.url for k in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")})
    done = subprocess.run([sys.executable, "-m", "kit", *kit_run_args(tmp_path, str(online), folder, model)],
                          capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert proxy.connections == 0, f"{proxy.connections} connection(s) to the proxy"
    assert "out-of-fold qwk" in done.stdout and "Retrying" not in done.stdout + done.stderr


def stopped(tmp_path, capsys, folder, model, *params) -> str:
    assert cli.main(kit_run_args(tmp_path, ESSAYS, folder, model, "fallback=none", *params)) == 1  # no prior
    err = capsys.readouterr().err.strip().splitlines()
    assert not [line for line in err if "Traceback" in line]
    assert not (tmp_path / "out" / "submission.csv").exists()
    return err[-1]


def test_kit_run_stops_at_a_missing_text_column(tmp_path, capsys):
    folder, model = essays_and_model(tmp_path)
    train = pd.read_csv(folder / "train.csv").rename(columns={"full_text": "text"})
    train.to_csv(folder / "train.csv", index=False)
    assert stopped(tmp_path, capsys, folder, model) == ("error: train.csv: no column 'full_text' (it has: essay_id, text, "
                                                        "score); fix [data] in the config")


def test_kit_run_stops_at_empty_texts_in_more_than_one_percent_of_the_rows(tmp_path, capsys):
    folder, model = essays_and_model(tmp_path)
    train = pd.read_csv(folder / "train.csv")
    train.loc[5:9, "full_text"] = "   "  # 5 of 240: a few more than the 1% left out with a warning
    train.to_csv(folder / "train.csv", index=False)
    assert stopped(tmp_path, capsys, folder, model) == ("error: train.csv: the text is empty in row 7 (columns full_text; 5 "
                                                        "such rows, 2.1% of 240); drop those rows or fill them (up to 1% of "
                                                        "the rows are left out with a warning)")


def test_kit_run_stops_at_a_model_folder_without_tokenizer_files(tmp_path, capsys):
    folder, model = essays_and_model(tmp_path)
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        (model / name).unlink(missing_ok=True)
    line = stopped(tmp_path, capsys, folder, model)
    assert line.startswith(f"error: model folder {model} has no tokenizer files (none of tokenizer.json, vocab.txt, ")
    assert line.endswith("attach a model folder saved with its tokenizer (tokenizer.save_pretrained) or copy them into it")


def test_kit_run_stops_at_a_max_length_beyond_the_models_positions(tmp_path, capsys):
    folder, model = essays_and_model(tmp_path)
    assert stopped(tmp_path, capsys, folder, model, "max_length=1024") == (
        f"error: max_length 1024 is beyond the 512 token positions of the model in {model} (its config.json); set "
        "max_length to 512 or less")


def test_text_trains_under_ddp_on_two_workers(tmp_path):
    """One model on two gloo workers: every parameter must get a gradient on every rank (BERT's unused [CLS]
    pooler stopped the second step), and the ranks take whole batches of one length."""
    alone = tmp_path / "essays.toml"  # the training kernel alone: its inference kernel is the first test's
    head, _, rest = config.resolve(ESSAYS).read_text().partition("[inference]")
    alone.write_text(head + rest[rest.index("[params]"):])
    assert "[inference]" not in alone.read_text()
    result = smoke.run(str(alone), root=tmp_path / "run", overrides={"parallel": "ddp", "world_size": 2, "epochs": 2})
    assert result.inference is None
    log = (result.submission.parent / "kit.log").read_text()
    assert "parallel: ddp on 2 workers" in log and "from folds [1, 2]" in log
    assert "out-of-fold qwk over 2 of 2 folds" in log


def test_a_text_regression_of_one_value_column_runs(tmp_path):
    """us-patent-phrase-to-phrase-matching's shape: one value column under pearson. The data step's line about
    the target read the first and last class of every kind, and a single value has none (an IndexError)."""
    folder, model = essays_and_model(tmp_path)
    pearson = tmp_path / "pearson.toml"
    pearson.write_text(config.resolve(ESSAYS).read_text().replace('metric = "qwk"', 'metric = "pearson"'))
    assert cli.main(kit_run_args(tmp_path, str(pearson), folder, model)) == 0
    log = (tmp_path / "out" / "kit.log").read_text()
    assert "target         a value, metric pearson" in log
    sub = pd.read_csv(tmp_path / "out" / "submission.csv")
    assert sub["score"].nunique() > 1 and sub["score"].dtype.kind == "f"  # values, not whole scores


def test_max_length_auto_takes_a_short_encoders_positions(tmp_path):
    """A 128-position encoder with the default max_length stopped at set-up ("max_length 512 is beyond the 128
    token positions"); auto takes the model's positions, and no more than the longest text needs."""
    from kit.smoke.text import build_tiny_encoder

    folder, _ = essays_and_model(tmp_path)
    train = pd.read_csv(folder / "train.csv")
    short = build_tiny_encoder(train["full_text"], tmp_path / "short-encoder", seed=2, max_positions=128)
    assert cli.main(kit_run_args(tmp_path, ESSAYS, folder, short, "max_length=auto")) == 0
    log = (tmp_path / "out" / "kit.log").read_text()
    assert "max_length     auto: 128 tokens, the longest text (the model has 128 positions" in log
