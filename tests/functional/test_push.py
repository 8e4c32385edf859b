"""push / status / output through the official kaggle client, against a fake Kaggle API on loopback.

Each case runs the real CLI in a subprocess (the client reads KAGGLE_API_ENVIRONMENT when it is imported),
and checks the one line it prints, its exit code, and that the API key shows up nowhere."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import dog_breed_toml

KEY = "f00dfeedf00dfeedf00dfeedf00dfeed"


@pytest.fixture
def env(fake_kaggle, tmp_path, kaggle_user):
    kernels = tmp_path / "kernels"
    return {
        **os.environ,
        **fake_kaggle.env(),
        "KAGGLE_USERNAME": "tester",
        "KAGGLE_KEY": KEY,
        "KAGGLE_CONFIG_DIR": str(kaggle_user),
        "KIT_KERNELS_DIR": str(kernels),
        "KIT_RETRY_BASE_S": "0.01",
        "KIT_POLL_S": "0.01",
        "KIT_HTTP_TIMEOUT_S": "1",
    }


def kit(env, *args, timeout=120) -> subprocess.CompletedProcess:
    out = subprocess.run([sys.executable, "-m", "kit", *args], env=env, capture_output=True, text=True, timeout=timeout)
    assert KEY not in out.stdout + out.stderr
    assert "Traceback" not in out.stderr
    return out


def error_line(out) -> str:
    assert out.returncode == 1, out.stdout + out.stderr
    errors = [line for line in out.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, out.stderr
    return errors[0]


def test_push_sends_the_bundle(env, fake_kaggle):
    out = kit(env, "push", "dog-breed")
    assert out.returncode == 0, out.stderr
    assert "pushed tester/dog-breed-efficientnet version 1: https://www.kaggle.com/code/tester/kernel" in out.stdout
    (call,) = fake_kaggle.called("SaveKernel")
    body = call.body
    assert body["slug"] == "tester/dog-breed-efficientnet" and body["newTitle"] == "Dog Breed EfficientNet"
    assert body["machineShape"] == "NvidiaTeslaT4" and body["enableGpu"] is True and body["isPrivate"] is True
    assert body.get("enableInternet", False) is False
    assert body["competitionDataSources"] == ["dog-breed-identification"]
    assert body["language"] == "python" and body["kernelType"] == "notebook"
    notebook = json.loads(body["text"])
    assert any("kit-runtime" in c["metadata"].get("tags", []) for c in notebook["cells"])
    bundle = Path(env["KIT_KERNELS_DIR"]) / "dog-breed"
    for path in bundle.iterdir():
        assert KEY not in path.read_text()  # no credential in the bundle
    assert call.headers.get("Authorization", "").startswith("Basic ")


def test_push_rebuilds_only_when_stale(env, fake_kaggle, unplanned):
    kit(env, "kernel", unplanned)
    meta = Path(env["KIT_KERNELS_DIR"]) / "dog-breed" / "kernel-metadata.json"
    stamp = meta.stat().st_mtime_ns
    assert kit(env, "push", unplanned).returncode == 0
    assert meta.stat().st_mtime_ns == stamp


def test_official_cli_push_of_the_built_folder(env, fake_kaggle):
    kit(env, "kernel", "dog-breed")
    folder = Path(env["KIT_KERNELS_DIR"]) / "dog-breed"
    out = subprocess.run([str(Path(sys.executable).parent / "kaggle"), "kernels", "push", "-p", str(folder)],
                         env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "successfully pushed" in out.stdout, out.stdout + out.stderr
    assert fake_kaggle.called("SaveKernel")[0].body["machineShape"] == "NvidiaTeslaT4"


@pytest.mark.parametrize(
    "script, expected",
    [
        ([(401, {"code": 401, "message": f"Unauthorized: bad key {KEY}"})],
         "Kaggle rejected the credentials (HTTP 401); create a new API token"),
        ([(403, {"code": 403, "message": "You must accept this competition's rules"})], "accept the competition's rules"),
        ([(404, {"code": 404, "message": "Not found"})], "not found on Kaggle (HTTP 404)"),
        ([(429, {"code": 429, "message": "Too many requests"})] * 5, "Kaggle is rate-limiting (HTTP 429) after 5 tries"),
        ([(503, {"code": 503, "message": "Unavailable"})] * 5, "Kaggle's server failed (HTTP 503) 5 times; retry later"),
        ([(200, {"error": "Notebook title is already in use"})], "Kaggle refused it: Notebook title is already in use"),
        ([(200, {"url": "u", "invalidDatasetSources": ["me/weights"], "invalidModelSources": ["a/b/c/d/1"]})],
         "did not accept these sources (dataset_sources: me/weights; model_sources: a/b/c/d/1)"),
        ([(200, {}, 3)] * 5, "could not reach Kaggle (timed out) after 5 tries"),
    ],
    ids=["401", "403", "404", "429", "503", "error-field", "invalid-sources", "timeout"],
)
def test_push_failures_are_one_line(env, fake_kaggle, unplanned, script, expected):
    fake_kaggle.script("SaveKernel", *script)
    line = error_line(kit(env, "push", unplanned))
    assert expected in line, line


def test_transient_failures_are_retried(env, fake_kaggle, unplanned):
    fake_kaggle.script("SaveKernel", (429, {"code": 429, "message": "slow down"}), (502, {"code": 502, "message": "bad gateway"}))
    out = kit(env, "push", unplanned)
    assert out.returncode == 0, out.stderr
    assert "HTTP 429, retrying" in out.stderr and "HTTP 502, retrying" in out.stderr
    assert len(fake_kaggle.called("SaveKernel")) == 3


def test_missing_credentials(env, fake_kaggle):
    env = {k: v for k, v in env.items() if k not in ("KAGGLE_USERNAME", "KAGGLE_KEY")}
    out = kit(env, "push", "dog-breed")
    assert "resource plan" not in out.stderr  # said at once, before the plan's ~10 s
    line = error_line(out)
    assert line.startswith("error: no Kaggle credentials: set KAGGLE_USERNAME and KAGGLE_KEY, or save kaggle.json")
    assert not fake_kaggle.calls


def test_status_waits_until_complete(env, fake_kaggle):
    fake_kaggle.script("GetKernelSessionStatus", (200, {"status": "QUEUED"}), (200, {"status": "RUNNING"}),
                       (200, {"status": "RUNNING"}), (200, {"status": "COMPLETE"}))
    out = kit(env, "status", "dog-breed", "--wait")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["tester/dog-breed-efficientnet: QUEUED", "tester/dog-breed-efficientnet: RUNNING",
                                       "tester/dog-breed-efficientnet: COMPLETE"]
    request = fake_kaggle.called("GetKernelSessionStatus")[0].body
    assert request == {"userName": "tester", "kernelSlug": "dog-breed-efficientnet"}


def test_status_error_exits_nonzero_with_kaggles_message(env, fake_kaggle):
    fake_kaggle.script("GetKernelSessionStatus", (200, {"status": "ERROR", "failureMessage": "Your notebook tried to allocate "
                                                        "more memory than is available."}))
    line = error_line(kit(env, "status", "dog-breed", "--wait"))
    assert "failed on Kaggle: Your notebook tried to allocate more memory than is available." in line
    assert "make output COMP=dog-breed" in line


def test_status_of_an_unknown_kernel(env, fake_kaggle):
    fake_kaggle.script("GetKernelSessionStatus", (404, {"code": 404, "message": "Not found"}))
    assert "push it first: make push COMP=dog-breed" in error_line(kit(env, "status", "dog-breed"))
    fake_kaggle.script("GetKernelSessionStatus", (403, {"code": 403, "message": "Permission denied"}))
    assert "Kaggle denied access" in error_line(kit(env, "status", "dog-breed"))


def test_output_downloads_submission_log_and_plots(env, fake_kaggle):
    fake_kaggle.files.update({"/out/submission.csv": b"id,a\n1,0.5\n", "/out/history.png": b"\x89PNG fake"})
    fake_kaggle.script("ListKernelSessionOutput", (200, {
        "files": [{"url": "http://localhost/out/submission.csv", "fileName": "submission.csv"},
                  {"url": "http://localhost/out/history.png", "fileName": "history.png"}],
        "log": '[{"stream_name":"stdout","time":1.0,"data":"fold 1/5 epoch 1/10"}]',
    }))
    out = kit(env, "output", "dog-breed")
    assert out.returncode == 0, out.stderr
    folder = Path(env["KIT_KERNELS_DIR"]) / "dog-breed" / "output"
    assert (folder / "submission.csv").read_bytes() == b"id,a\n1,0.5\n"
    assert (folder / "history.png").exists() and "fold 1/5" in (folder / "dog-breed-efficientnet.log").read_text()
    assert "downloaded 3 files" in out.stdout and not fake_kaggle.leaked_auth


def test_failed_output_download_keeps_the_previous_output(env, fake_kaggle):
    folder = Path(env["KIT_KERNELS_DIR"]) / "dog-breed" / "output"
    folder.mkdir(parents=True)
    (folder / "submission.csv").write_text("old\n")
    fake_kaggle.script("ListKernelSessionOutput", *[(500, {"code": 500, "message": "oops"})] * 5)
    assert "server failed" in error_line(kit(env, "output", "dog-breed"))
    assert (folder / "submission.csv").read_text() == "old\n"


# -- the inference kernel of a config with [inference] --------------------------------------------------------

INFERENCE = "tester/dog-breed-efficientnet-inference"


@pytest.fixture
def pair(write_toml):
    """The dog-breed config with an [inference] table: kernels/comp/ trains, kernels/comp-infer/ predicts."""
    return str(write_toml("[inference]\n", base=True))


def test_push_inference_pushes_the_inference_kernel(env, fake_kaggle, pair):
    out = kit(env, "push", pair, "--inference")
    assert out.returncode == 0, out.stderr
    (call,) = fake_kaggle.called("SaveKernel")
    assert call.body["slug"] == INFERENCE and call.body["kernelDataSources"] == ["tester/dog-breed-efficientnet"]
    assert call.body.get("enableInternet", False) is False
    assert f"pushed {INFERENCE} version 1" in out.stdout and "INFER=1 WAIT=1" in out.stdout


def test_status_and_output_of_the_inference_kernel(env, fake_kaggle, pair):
    fake_kaggle.script("GetKernelSessionStatus", (200, {"status": "COMPLETE"}))
    out = kit(env, "status", pair, "--inference")
    assert out.returncode == 0 and out.stdout == f"{INFERENCE}: COMPLETE\n", out.stderr
    assert fake_kaggle.called("GetKernelSessionStatus")[0].body["kernelSlug"] == "dog-breed-efficientnet-inference"
    fake_kaggle.files["/out/submission.csv"] = b"id,a\n1,0.5\n"
    fake_kaggle.script("ListKernelSessionOutput", (200, {"files": [{"url": "http://localhost/out/submission.csv",
                                                                     "fileName": "submission.csv"}], "log": ""}))
    out = kit(env, "output", pair, "--inference")
    assert out.returncode == 0, out.stderr
    folder = Path(env["KIT_KERNELS_DIR"]) / "comp-infer" / "output"
    assert (folder / "submission.csv").read_bytes() == b"id,a\n1,0.5\n"
    assert not (Path(env["KIT_KERNELS_DIR"]) / "comp" / "output").exists()


@pytest.mark.parametrize("verb", ["push", "status", "output"])
def test_inference_without_an_inference_table_is_one_line(env, fake_kaggle, verb):
    line = error_line(kit(env, verb, "dog-breed", "--inference"))
    assert "has no [inference] table" in line and "drop INFER=1" in line
    assert not fake_kaggle.calls


def test_a_plan_over_a_kaggle_limit_is_refused_before_the_push_and_force_pushes_it(env, fake_kaggle, tmp_path):
    """dog-breed at 20 million training and test images: their rows of 120 probabilities pass a session's RAM. make
    push shows the plan and refuses in one line, pushing nothing; FORCE=1 pushes it."""
    text = dog_breed_toml()
    path = tmp_path / "dogs-huge.toml"
    path.write_text(text.replace("train_rows = 9199", "train_rows = 20000000").replace("test_rows = 1023",
                                                                                      "test_rows = 20000000"))
    out = kit(env, "push", str(path))
    assert "resource plan: dogs-huge at 20,000,000 training and 20,000,000 test rows" in out.stderr
    line = error_line(out)
    assert line.startswith("error: push ") and "its resource plan passes a limit (host RAM: the run needs" in line
    assert "FORCE=1" in line and not fake_kaggle.called("SaveKernel")
    forced = kit(env, "push", str(path), "--force")
    assert forced.returncode == 0, forced.stderr
    assert len(fake_kaggle.called("SaveKernel")) == 1


def test_make_plan_prints_the_plan_of_a_shipped_config_and_strict_fails_over_a_limit(env, tmp_path):
    out = kit(env, "plan", "herbarium-2022-fgvc9")
    assert out.returncode == 0 and "each row's 32 likeliest of 15,501 classes" in out.stdout
    assert out.stdout.rstrip().endswith("fits Kaggle GPU T4 x2")
    text = dog_breed_toml()
    path = tmp_path / "dogs-huge.toml"
    path.write_text(text.replace("test_rows = 1023", "test_rows = 40000000"))
    strict = kit(env, "plan", str(path), "--strict")
    assert strict.returncode == 1 and "over: host RAM: the run needs" in strict.stdout
