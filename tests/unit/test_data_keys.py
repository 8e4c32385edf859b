"""[data] keys per template: each template's record lists the keys it reads, and a config or a notebook's
`competition` parameter that sets another (a cnn config's text_columns) is refused in one line, as [params]
refuses a parameter the template lacks."""
import dataclasses
import re
from pathlib import Path

import pytest
from conftest import MINIMAL_TOML

from kit import config, templates
from kit.errors import KitError
from kit.spec import Data, Spec

CNN = MINIMAL_TOML.format(title="Some Competition Baseline", kernel="")


def test_a_cnn_config_that_sets_text_columns_is_refused_in_one_line(write_toml):
    path = write_toml(CNN + '\n[data]\ntext_columns = ["comment_text"]\n')
    with pytest.raises(KitError) as e:
        config.load(str(path))
    line = str(e.value)
    assert "\n" not in line
    assert line == (f"{path}: [data]: text_columns is not read by the cnn template (only by text, spans, seq2seq, "
                    "imputation); remove it, "
                    "or set the template that reads it")


def test_a_key_set_to_its_default_is_refused_too(write_toml):
    """`task = "per_step"` is the default, but a cnn config that writes it means something the template ignores."""
    with pytest.raises(KitError, match=r"\[data\]: task is not read by the cnn template \(only by lstm, transformer\)"):
        config.load(str(write_toml(CNN + '\n[data]\ntask = "per_step"\n')))


def test_the_notebooks_parameter_is_refused_alike_and_its_defaults_pass():
    with pytest.raises(KitError, match=r"^competition parameter: rle_order is not read by the text template"):
        Spec.from_dict({"slug": "s", "template": "text", "rle_order": "row"}, "competition parameter")
    spec = config.load("jigsaw-unintended-bias-in-toxicity-classification").spec
    assert Spec.from_dict(spec.to_dict()) == spec  # every key, most at their defaults: a worker's payload


def test_keys_read_by_a_template_are_taken():
    spec = Spec.from_dict({"slug": "s", "template": "segmentation", "metric": "dice", "rle_order": "row",
                           "train_masks": "masks", "fold_column": "fold"})
    assert (spec.rle_order, spec.train_masks, spec.fold_column) == ("row", "masks", "fold")


@pytest.mark.parametrize("name", templates.names())
def test_a_template_reads_the_keys_its_notebook_shows_and_only_keys_that_exist(name):
    record = templates.get(name)
    known = {f.name for f in dataclasses.fields(Data)}
    assert set(record.data_keys) <= set(record.data_reads) <= known


def test_every_data_key_is_read_by_some_template():
    read = {k for t in templates.TEMPLATES.values() for k in t.data_reads}
    assert {f.name for f in dataclasses.fields(Data)} - read == set()


def test_the_config_page_lists_what_each_template_reads():
    page = (Path(__file__).resolve().parents[2] / "docs" / "config.md").read_text()
    common = re.search(r"Every template reads (.+?); beside them", page, re.S).group(1)
    listed = {m.group(1): set(re.findall(r"`(\w+)`", common + m.group(2)))
              for m in re.finditer(r"^\| (\w+) \| (`.+`) \|$", page, re.M) if m.group(1) in templates.names()}
    assert listed == {t.name: set(t.data_reads) for t in templates.TEMPLATES.values()}
