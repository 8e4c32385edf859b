"""The packages dataset, make publish, make output's checkpoints, make logs and push's session time-out, through
the official kaggle client against the fake Kaggle API (the real CLI in a subprocess, as in test_push): what
reaches Kaggle on success, and one line for each failure."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import wheels
from test_code_competition import fake_run
from test_push import KEY, error_line, kit

TRAINING = "tester/dog-breed-efficientnet"
PACKAGES = "tester/dog-breed-efficientnet-packages"


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    return wheels.probe_index(tmp_path_factory.mktemp("wheels"))


@pytest.fixture
def env(fake_kaggle, tmp_path, kaggle_user, index):
    """test_push's environment, pip pointed at the local index, and the client's resumable-upload records
    in this test's temp folder."""
    return {**os.environ, **fake_kaggle.env(), "KAGGLE_USERNAME": "tester", "KAGGLE_KEY": KEY,
            "KAGGLE_CONFIG_DIR": str(kaggle_user), "KIT_KERNELS_DIR": str(tmp_path / "kernels"), "KIT_RETRY_BASE_S": "0.01",
            "KIT_POLL_S": "0.01", "KIT_HTTP_TIMEOUT_S": "1", "TMPDIR": str(tmp_path), **wheels.local_index_env(index)}


def with_packages(write_toml, *packages: str, extra: str = "") -> str:
    path = write_toml("", base=True, sizes=False)  # no resource plan: these cases are about the packages
    listed = ", ".join(f'"{p}"' for p in packages)
    path.write_text(path.read_text().replace("internet = false", f"internet = false\npackages = [{listed}]") + extra)
    return str(path)


# -- the packages dataset ------------------------------------------------------------------------------------

def test_push_uploads_the_wheels_first_and_attaches_them(env, fake_kaggle, write_toml):
    config = with_packages(write_toml, "kitprobe==1.0")
    out = kit(env, "push", config)
    assert out.returncode == 0, out.stderr
    assert f"packages dataset {PACKAGES}: created (3 files)" in out.stderr
    methods = [c.method for c in fake_kaggle.calls if not c.method.startswith(("PUT", "StartBlob", "GetAccel"))]
    assert methods[0] == "GetDatasetStatus" and methods[-1] == "SaveKernel"
    assert methods.index("CreateDataset") < methods.index("SaveKernel")  # the dataset first, and processed
    create = fake_kaggle.called("CreateDataset")[0].body
    assert create["ownerSlug"] == "tester" and create["slug"] == "dog-breed-efficientnet-packages"
    assert create["isPrivate"] is True and create["licenseName"] == "other"
    folder = Path(env["KIT_KERNELS_DIR"]) / "comp-packages"
    held = fake_kaggle.datasets[PACKAGES][-1]
    assert sorted(held) == ["kit-packages.json", "kitprobe-1.0-py3-none-any.whl", "kitprobe_dep-2.0-py3-none-any.whl"]
    assert all(held[name] == (folder / name).read_bytes() for name in held)  # every byte arrived; numpy did not go
    save = fake_kaggle.called("SaveKernel")[0].body
    assert save["datasetDataSources"] == [PACKAGES]
    (runtime,) = [c for c in json.loads(save["text"])["cells"] if "kit-runtime" in c["metadata"].get("tags", [])]
    assert f"_install_packages('{PACKAGES}', ['kitprobe==1.0'], ['kitprobe'])" in "".join(runtime["source"])
    assert not fake_kaggle.leaked_auth


def test_a_second_push_with_the_same_wheels_makes_no_new_version(env, fake_kaggle, write_toml):
    config = with_packages(write_toml, "kitprobe==1.0")
    assert kit(env, "push", config).returncode == 0
    out = kit(env, "push", config)
    assert out.returncode == 0, out.stderr
    assert f"packages dataset {PACKAGES}: unchanged" in out.stderr
    assert len(fake_kaggle.datasets[PACKAGES]) == 1 and not fake_kaggle.called("CreateDatasetVersion")
    assert len(fake_kaggle.called("SaveKernel")) == 2


def test_other_wheels_make_a_new_version(env, fake_kaggle, write_toml):
    assert kit(env, "push", with_packages(write_toml, "kitprobe==1.0")).returncode == 0
    out = kit(env, "push", with_packages(write_toml, "kitprobe==1.0", "kitprobe-dep==1.0"))
    assert out.returncode == 0, out.stderr
    assert f"packages dataset {PACKAGES}: versioned" in out.stderr
    (call,) = fake_kaggle.called("CreateDatasetVersion")
    assert call.body["body"]["versionNotes"] == "kit: kitprobe==1.0, kitprobe-dep==1.0"
    assert "kitprobe_dep-1.0-py3-none-any.whl" in fake_kaggle.datasets[PACKAGES][-1]


def test_the_inference_kernel_attaches_the_same_dataset(env, fake_kaggle, write_toml):
    config = with_packages(write_toml, "kitprobe==1.0", extra="\n[inference]\n")
    out = kit(env, "push", config, "--inference")
    assert out.returncode == 0, out.stderr
    save = fake_kaggle.called("SaveKernel")[0].body
    assert save["slug"] == f"{TRAINING}-inference" and save["datasetDataSources"] == [PACKAGES]
    assert f"_install_packages('{PACKAGES}', ['kitprobe==1.0'], ['kitprobe'])" in save["text"]


def test_the_official_cli_creates_the_dataset_from_the_folder(env, fake_kaggle, write_toml):
    assert kit(env, "kernel", with_packages(write_toml, "kitprobe==1.0")).returncode == 0
    folder = Path(env["KIT_KERNELS_DIR"]) / "comp-packages"
    out = subprocess.run([str(Path(sys.executable).parent / "kaggle"), "datasets", "create", "-p", str(folder)], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "being created" in out.stdout, out.stdout + out.stderr
    uploaded = sorted(p.name for p in folder.iterdir() if p.name != "dataset-metadata.json")
    assert sorted(fake_kaggle.datasets[PACKAGES][-1]) == uploaded


@pytest.mark.parametrize("script, expected", [
    ({"CreateDataset": [(200, {"status": "Error", "error": "The dataset slug is taken"})]},
     f"create dataset {PACKAGES}: Kaggle refused it: The dataset slug is taken"),
    ({"PUT": [(500, {"code": 500, "message": "storage down"})]}, "(the upload failed), so nothing was created; retry"),
    ({"GetDatasetStatus": [(503, {"code": 503, "message": "unavailable"})] * 5},
     "Kaggle's server failed (HTTP 503) 5 times"),
    ({"GetDatasetStatus": [(404, {"code": 404, "message": "no"})] * 2 + [(200, {"status": "FAILED"})]},  # kit's, the client's
     f"dataset {PACKAGES}: Kaggle could not process it (failed)"),
], ids=["refused", "upload-failed", "503", "processing-failed"])
def test_packages_dataset_failures_are_one_line_and_push_nothing(env, fake_kaggle, write_toml, script, expected):
    for method, answers in script.items():
        fake_kaggle.script(method, *answers)
    line = error_line(kit(env, "push", with_packages(write_toml, "kitprobe==1.0")))
    assert expected in line, line
    assert not fake_kaggle.called("SaveKernel")


def test_packages_that_do_not_resolve_are_one_line(env, fake_kaggle, write_toml):
    line = error_line(kit(env, "kernel", with_packages(write_toml, "kitprobe==3.0")))
    assert "packages: pip could not resolve kitprobe==3.0 for Kaggle's image" in line and "change [kernel] packages" in line
    assert not fake_kaggle.calls


# -- make publish: a run's fold checkpoints as a model version ------------------------------------------------

def published_run(tmp_path) -> Path:
    output = tmp_path / "run-output"
    fake_run(output, name="abc123")
    (output / "checkpoints" / "abc123" / "fold0.json").write_text("{}")
    (output / "checkpoints" / "abc123" / "fold0.last.pt").write_bytes(b"resume state")
    return output


def test_publish_creates_the_model_then_adds_versions(env, fake_kaggle, tmp_path):
    output = published_run(tmp_path)
    out = kit(env, "publish", "dog-breed", "--from", str(output))
    assert out.returncode == 0, out.stderr
    version = f"{TRAINING}/pytorch/default/1"
    assert out.stdout.splitlines()[-1] == f'trained_model = "{version}"'
    model = fake_kaggle.called("CreateModel")[0].body
    assert model["slug"] == "dog-breed-efficientnet" and model["isPrivate"] is True
    instance = fake_kaggle.called("CreateModelInstance")[0].body
    assert instance["body"]["framework"] == "MODEL_FRAMEWORK_PY_TORCH" and instance["body"]["instanceSlug"] == "default"
    files = fake_kaggle.instances[f"{TRAINING}/pytorch/default"][0]
    assert sorted(files) == ["fold0.json", "fold0.meta.pt", "fold0.pt", "run.json"]  # no resume state
    assert files["fold0.pt"] == (output / "checkpoints" / "abc123" / "fold0.pt").read_bytes()
    again = kit(env, "publish", "dog-breed", "--from", str(output))
    assert again.returncode == 0, again.stderr
    assert f'trained_model = "{TRAINING}/pytorch/default/2"' in again.stdout
    assert len(fake_kaggle.called("CreateModel")) == 1 and fake_kaggle.called("CreateModelInstanceVersion")


def test_publish_without_checkpoints_says_to_download_them(env, fake_kaggle, tmp_path):
    (tmp_path / "output").mkdir()
    (tmp_path / "output" / "submission.csv").write_text("id,a\n")
    line = error_line(kit(env, "publish", "dog-breed", "--from", str(tmp_path / "output")))
    assert "no fold checkpoints under" in line and "make output COMP=dog-breed ALL=1" in line
    assert not fake_kaggle.calls


@pytest.mark.parametrize("method, answer, expected", [
    ("CreateModel", (200, {"error": "Model slug is reserved"}), "create model tester/dog-breed-efficientnet: Kaggle refused "
                                                                "it: Model slug is reserved"),
    ("CreateModelInstance", (200, {"error": "License is not valid"}), "Kaggle refused it: License is not valid"),
    ("GetModel", (403, {"code": 403, "message": "Permission 'models.get' was denied"}), "check that you own the model"),
    ("PUT", (500, {"code": 500, "message": "storage down"}), "(the upload failed), so nothing was created"),
], ids=["model-refused", "instance-refused", "403", "upload-failed"])
def test_publish_failures_are_one_line(env, fake_kaggle, tmp_path, method, answer, expected):
    fake_kaggle.script(method, answer)
    line = error_line(kit(env, "publish", "dog-breed", "--from", str(published_run(tmp_path))))
    assert expected in line, line
    assert not fake_kaggle.instances


# -- make output: the checkpoints stay unless ALL=1 ------------------------------------------------------------

OUTPUT = {"submission.csv": b"id,a\n1,0.5\n", "cv.json": b"{}", "checkpoints/abc/run.json": b"{}",
          "checkpoints/abc/fold0.pt": b"weights", "checkpoints/abc/fold0.last.pt": b"state"}


@pytest.mark.parametrize("everything", [False, True], ids=["laptop", "all"])
def test_output_leaves_the_checkpoints_unless_all(env, fake_kaggle, everything):
    fake_kaggle.files.update({f"/out/{name}": data for name, data in OUTPUT.items()})
    fake_kaggle.logs.append('[{"stream_name":"stdout","time":1.0,"data":"done\\n"}]')
    out = kit(env, "output", "dog-breed", *(["--all"] if everything else []))
    assert out.returncode == 0, out.stderr
    folder = Path(env["KIT_KERNELS_DIR"]) / "dog-breed" / "output"
    got = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    wanted = [n for n in OUTPUT if everything or not n.endswith(".pt")] + ["dog-breed-efficientnet.log"]
    assert got == sorted(wanted)
    fetched = [c.method for c in fake_kaggle.calls if c.method.startswith("GET ")]
    assert any(m.endswith(".pt") for m in fetched) == everything  # left on Kaggle, not downloaded and dropped
    assert ("ALL=1 downloads them too" in out.stdout) != everything


# -- make logs -------------------------------------------------------------------------------------------------

def log(*lines: str) -> str:
    return json.dumps([{"stream_name": "stdout", "time": float(i), "data": f"{line}\n"} for i, line in enumerate(lines)])


def test_logs_prints_the_log_so_far(env, fake_kaggle):
    fake_kaggle.logs.append(log("kit 0.1.0", "fold 1/5 epoch 1/10"))
    out = kit(env, "logs", "dog-breed")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["kit 0.1.0", "fold 1/5 epoch 1/10"]
    assert fake_kaggle.called("ListKernelSessionOutput")[0].body == {"userName": "tester", "kernelSlug": "dog-breed-efficientnet"}


def test_logs_follow_prints_each_line_once_until_the_run_ends(env, fake_kaggle):
    fake_kaggle.logs.extend([log("a"), log("a", "b"), log("a", "b", "c", "done")])
    fake_kaggle.script("GetKernelSessionStatus", (200, {"status": "RUNNING"}), (200, {"status": "COMPLETE"}))
    out = kit(env, "logs", "dog-breed", "--follow")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["a", "b", "c", "done"]


def test_logs_of_an_unpushed_kernel_is_one_line(env, fake_kaggle):
    fake_kaggle.script("ListKernelSessionOutput", (404, {"code": 404, "message": "Not found"}))
    assert "push it first: make push COMP=dog-breed" in error_line(kit(env, "logs", "dog-breed"))


# -- push's session time-out -----------------------------------------------------------------------------------

@pytest.mark.parametrize("budget, inference, expected", [
    (0, False, 12 * 3600),  # Kaggle's session limit less kit's margin, plus the margin: capped at the limit
    (7200, True, 7200 + 1800),  # the budget plus the margin
], ids=["session", "inference-budget"])
def test_push_passes_a_session_timeout(env, fake_kaggle, write_toml, budget, inference, expected):
    path = write_toml("[inference]\n", base=True, sizes=False)
    path.write_text(path.read_text().replace("[params]\n", f"[params]\ntime_budget_s = {budget}\n", 1))
    out = kit(env, "push", str(path), "--force", *(["--inference"] if inference else []))
    assert out.returncode == 0, out.stderr
    assert fake_kaggle.called("SaveKernel")[0].body["sessionTimeoutSeconds"] == expected
    assert f"Kaggle stops it after {expected / 3600:.1f} h" in out.stdout
