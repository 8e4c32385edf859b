"""The sample plots on the smoke data: whole class names in the image grid; every sequence line labelled."""
import pytest

from kit import config, smoke
from kit.pipelines import create_pipeline
from kit.pipelines.cnn import sample_title
from kit.run import start
from kit.smoke import images as smoke_images


def loaded(tmp_path, comp: str):
    cfg = config.load(comp)
    data = tmp_path / "data"
    smoke.make_dataset(cfg.spec, data, seed=1)
    session = start(cfg.spec.template, {**cfg.parameters(smoke=True), "data_dir": str(data), "output_dir": str(tmp_path / "out")})
    pipe = create_pipeline(session)
    return session, pipe, pipe.load()


@pytest.mark.parametrize(
    "label, title, size",
    [
        ("pug", "pug", 8.0),
        ("black-and-tan_coonhound", "black-and-tan_coonhound", 8.0),  # 23 characters fit on one line
        ("german_short-haired_pointer", "german_short-\nhaired_pointer", 8.0),
        ("a" * 60, "a" * 30 + "\n" + "a" * 30, 6.4),
        ("b" * 100, "b" * 50 + "\n" + "b" * 50, 5.0),
    ],
)
def test_sample_titles_keep_the_whole_label(label, title, size):
    assert sample_title(label) == (title, pytest.approx(size))


def test_the_image_grid_shows_whole_breed_names(tmp_path):
    session, pipe, data = loaded(tmp_path, "dog-breed")
    fig = pipe.show_samples(data)
    titles = [ax.get_title().replace("\n", "") for ax in fig.axes if ax.get_title()]
    assert len(titles) == 12 and set(titles) <= set(smoke_images.DOG_BREEDS)
    assert any(len(t) > 24 for t in titles)  # german_short-haired_pointer, soft-coated_wheaten_terrier
    assert (session.output_dir / "samples.png").is_file()


def test_the_ventilator_samples_label_every_line_and_axis(tmp_path):
    session, pipe, data = loaded(tmp_path, "ventilator-lstm")
    fig = pipe.show_samples(data)
    panels = [[other for other in fig.axes if other.bbox.bounds == ax.bbox.bounds] for ax in fig.axes if ax.get_xlabel()]
    assert len(panels) == 3
    for ax, *twins in panels:
        lines = [line for a in (ax, *twins) for line in a.get_lines()]
        legends = [a.get_legend() for a in (ax, *twins) if a.get_legend() is not None]
        assert len(legends) == 1 and [t.get_text() for t in legends[0].get_texts()] == [line.get_label() for line in lines]
        assert [line.get_label() for line in lines] == ["R", "C", "time_step", "u_in", "u_out", "pressure (right axis)"]
        assert ax.get_xlabel() == "step (by time_step)" and ax.get_ylabel() == "feature (standardised)"
        assert [twin.get_ylabel() for twin in twins] == ["pressure"]
