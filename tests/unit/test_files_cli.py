import pytest

from kit import cli, files


def test_atomic_write_keeps_the_old_file_when_the_writer_fails(tmp_path):
    path = tmp_path / "submission.csv"
    files.write_text(path, "old\n")
    with pytest.raises(RuntimeError):
        with files.atomic_path(path) as tmp:
            tmp.write_text("half")
            raise RuntimeError("killed")
    assert path.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["submission.csv"]
    assert oct(path.stat().st_mode & 0o777) != oct(0o600)


def test_param_values_parse_as_toml():
    assert cli._value("epochs=2") == ("epochs", 2)
    assert cli._value("lr=3e-4") == ("lr", 3e-4)
    assert cli._value("pretrained=false") == ("pretrained", False)
    assert cli._value("device=cpu") == ("device", "cpu")
    assert cli._value('model_name="resnet18"') == ("model_name", "resnet18")


def test_cli_returns_one_for_kit_errors(capsys):
    assert cli.main(["kernel", "no-such-competition"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: unknown competition 'no-such-competition'") and err.count("\n") == 1


def test_cli_run_rejects_unknown_parameter(capsys, tmp_path):
    assert cli.main(["run", "dog-breed", "--data", str(tmp_path), "--output", str(tmp_path / "o"), "-p", "epoch=2"]) == 1
    assert "-p: unknown key 'epoch'" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
