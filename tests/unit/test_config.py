"""Competition configs: what loads, and the one-line error for every way a config can be wrong."""
import pytest
from conftest import MINIMAL_TOML

from kit import config
from kit.errors import KitError
from kit.spec import Spec

MINIMAL = MINIMAL_TOML.format(title="Some Competition Baseline", kernel="")


def test_shipped_dog_breed_config_loads():
    cfg = config.load("dog-breed")
    assert cfg.name == "dog-breed"
    assert cfg.spec.slug == "dog-breed-identification"
    assert cfg.spec.template == "cnn" and cfg.spec.metric == "log_loss"
    assert (cfg.spec.train, cfg.spec.id_column, cfg.spec.target_column) == ("labels.csv", "id", "breed")
    assert cfg.kernel.machine_shape == "NvidiaTeslaT4" and not cfg.kernel.internet and cfg.kernel.private
    assert cfg.smoke["model_name"] == "test_efficientnet"


def test_every_shipped_config_loads():
    for name in config.shipped():
        assert config.load(name).name == name


def test_path_to_any_toml(write_toml):
    path = write_toml(MINIMAL, name="my-comp.toml")
    cfg = config.load(str(path))
    assert cfg.name == "my-comp" and cfg.spec.metric == "accuracy"
    assert cfg.spec.train == "train.csv"  # [data] defaults


def test_parameters_carry_spec_then_params_then_smoke(write_toml):
    path = write_toml(MINIMAL + '\n[params]\nepochs = 3\nmodel_name = "resnet18"\n[smoke]\nepochs = 1\n')
    cfg = config.load(str(path))
    assert cfg.parameters()["epochs"] == 3
    assert cfg.parameters(smoke=True)["epochs"] == 1
    assert cfg.parameters(smoke=True)["model_name"] == "resnet18"
    assert cfg.parameters()["competition"]["slug"] == "some-competition"
    assert "features" not in cfg.parameters()["competition"]  # a cnn notebook shows no sequence keys
    assert Spec.from_dict(cfg.parameters()["competition"]) == cfg.spec  # and loses nothing by it


@pytest.mark.parametrize(
    "extra, expected",
    [
        ("\n[data]\ntrian = 'x.csv'\n", "[data]: unknown key 'trian'"),
        ("\n[params]\nepoch = 3\n", "[params]: unknown key 'epoch'"),
        ("\n[params]\nepochs = 'ten'\n", "[params]: epochs must be an integer, got 'ten'"),
        ("\n[params]\nepochs = true\n", "[params]: epochs must be an integer, got True"),
        ("\n[params]\nlr = 'fast'\n", "[params]: lr must be a number"),
        ("\n[params]\nepochs = 0\n", "[params]: epochs = 0 must be at least 1"),
        ("\n[params]\ndevice = 'tpu'\n", "[params]: device = 'tpu' is not one of 'auto', 'cuda', 'cpu'"),
        ("\n[params]\nbatch_size = 'max'\n", "[params]: batch_size = 'max' must be an integer or \"auto\""),
        ("\n[params]\nbatch_size = 1.5\n", "[params]: batch_size must be an integer or \"auto\", got 1.5"),
        ("\n[params]\nbatch_size = 0\n", "batch_size = 0 must be at least 1"),
        ("\n[params]\ncompetition = {}\n", "[params]: unknown key 'competition'"),
        ("\n[smoke]\nepohcs = 1\n", "[smoke]: unknown key 'epohcs'"),
        ("\n[kernel]\ninternet = 'no'\n", None),  # duplicate table: a TOML error
        ("\n[extras]\na = 1\n", "unknown section [extras]"),
    ],
)
def test_config_errors_name_file_and_key(write_toml, extra, expected):
    path = write_toml(MINIMAL + extra)
    with pytest.raises(KitError) as e:
        config.load(str(path))
    message = str(e.value)
    assert str(path) in message
    assert "\n" not in message
    if expected:
        assert expected in message


def test_wrong_type_in_kernel_and_competition(write_toml):
    path = write_toml(MINIMAL.replace('template = "cnn"', 'template = "rnn"'))
    with pytest.raises(KitError, match=r"\[competition\]: template = 'rnn' is not one of 'cnn'"):
        config.load(str(path))
    path = write_toml(MINIMAL.replace('title = "Some Competition Baseline"', "title = 5"))
    with pytest.raises(KitError, match=r"\[kernel\]: title must be a string, got 5"):
        config.load(str(path))


def test_missing_sections_and_files(write_toml):
    with pytest.raises(KitError, match="missing \\[competition\\]"):
        config.load(str(write_toml('[kernel]\ntitle = "Hello World"\n')))
    with pytest.raises(KitError, match="title is missing"):
        config.load(str(write_toml('[competition]\nslug = "x-y"\n')))
    with pytest.raises(KitError, match="slug is empty"):
        config.load(str(write_toml('[competition]\ntemplate = "cnn"\n[kernel]\ntitle = "Hello World"\n')))
    with pytest.raises(KitError, match="invalid TOML"):
        config.load(str(write_toml("[competition\n")))
    with pytest.raises(KitError, match="unknown competition 'dog-bread' \\(shipped: .*dog-breed"):
        config.load("dog-bread")
    with pytest.raises(KitError, match="no such config file"):
        config.load("missing/file.toml")
    with pytest.raises(KitError, match="no competition given"):
        config.load("")
