"""`kit init DATA`: a competition config drafted from the competition's files. It reads the sample submission,
the tables, the COCO label files and the image folders (plain or archived: kit.build.survey), guesses the
template, the [data] keys and the metric (kit.build.guesses, image_guesses, metric_guess), and prints a TOML
config whose every guessed line says what it was read from (`# guessed: ...`), with a `# cannot tell: ...`
line for what the files cannot say. The draft is loaded as `make kernel` loads a config before it is shown, and
goes through the kernel's own data step (kit.build.draft_check)."""
from __future__ import annotations

import json
import re
import tempfile
import tomllib
from pathlib import Path
from typing import Any

from slugify import slugify

from kit import config as kit_config
from kit import files, metric_records, templates
from kit.build import box_guesses, draft_check, group_guess, guesses, image_guesses, mask_guesses, metric_guess, sequence_guesses
from kit.build.guesses import Guess, Line
from kit.build.survey import Survey
from kit.errors import KitError
from kit.spec import Spec
from kit.train.metrics import LABEL_SETS

# folder names that hold a competition's files but are not its slug (MLE-bench's <slug>/prepared/public)
NOT_SLUGS = {"public", "prepared", "private", "data", "input", "raw", "files", "download", "downloads", "kaggle"}
# the identities Jigsaw's unintended-bias metric scores, in its grader's order (docs/config.md)
IDENTITIES = ("male", "female", "homosexual_gay_or_lesbian", "christian", "jewish", "muslim", "black", "white",
              "psychiatric_or_mental_illness")
TITLES = {"cnn": "CNN", "audio": "Log-mel CNN", "lstm": "LSTM", "transformer": "Transformer", "text": "Text Encoder",
          "tabular": "Boosters", "segmentation": "Unet",
          "detection": "Faster R-CNN"}
# [smoke]: a model small enough for the CPU, as the shipped configs of each template have it
SMOKE = {
    "cnn": {"model_name": "test_efficientnet", "pretrained": False, "image_size": 64, "epochs": 8, "folds": 2,
            "batch_size": 16, "device": "cpu"},
    "audio": {"model_name": "test_resnet", "pretrained": False, "n_mels": 32, "epochs": 6, "folds": 2, "batch_size": 16,
              "device": "cpu"},
    "lstm": {"device": "cpu", "epochs": 25, "folds": 2, "batch_size": 32, "d_model": 48, "hidden_size": 48,
             "num_layers": 2, "dropout": 0.0, "patience": 0},
    "transformer": {"device": "cpu", "epochs": 25, "folds": 2, "batch_size": 32, "d_model": 48, "hidden_size": 96,
                    "num_layers": 2, "nhead": 4, "dropout": 0.0, "patience": 0},
    "text": {"model_path": "kit-tiny-encoder", "device": "cpu", "max_length": 384, "epochs": 6, "folds": 2,
             "batch_size": 16, "lr": 1e-3, "layer_decay": 1.0, "warmup_epochs": 0.5},
}
COMMENT_AT = 40  # the column a line's comment starts at, as in the shipped configs


def draft(data_dir: str | Path, metric: str = "", template: str = "") -> str:
    """The config's TOML text for the competition whose files are in `data_dir`; `metric` and `template`, where
    given, are taken as they are instead of guessed."""
    data_dir = Path(data_dir)
    if template:
        templates.get(template)  # one line listing the known ones
    if metric:
        try:
            metric_records.metric_name(metric)
        except ValueError as e:
            raise KitError(f"--metric '{metric}' {e}") from None
    with tempfile.TemporaryDirectory(prefix="kit-init-") as scratch:
        survey = Survey.of(data_dir, Path(scratch))
        sample_file = guesses.sample_name(survey)
        guess = _guess(survey, sample_file, metric, template)
        group = group_guess.group_line(survey, guess, sample_file)
        if group is not None:
            guess.data.append(group)
        misfit = metric_records.metric_misfit(guess.template, metric) if metric else ""
        if misfit:
            raise KitError(f"--metric {metric}: {misfit}, and the draft's template is {guess.template}; pass another "
                           "--metric, or --template")
        chosen, metric_line, cannot = _metric(survey, guess, sample_file, metric)
        if chosen == "bias_auc":
            guess.data.append(_identities(survey, guess))
        slug = slug_of(data_dir)
        competition = [Line("slug", slug, "guessed: the data folder's name"),
                       Line("template", guess.template, "given (--template)" if template else f"guessed: {guess.why}"),
                       metric_line]
        title = title_of(slug, guess.template)
        kernel = [Line("title", title, "5 to 50 characters: the kernel's URL is made from it"),
                  Line("machine_shape", "NvidiaTeslaT4", "GPU T4 x2"), Line("internet", False), Line("private", True)]
        packages = templates.get(guess.template).packages
        if packages:
            kernel.append(Line("packages", list(packages), "not on Kaggle's image: make kernel attaches their wheels"))
        text = render(data_dir, slug, competition, cannot, guess, kernel, _params(guess.template), survey.skipped)
        draft_check.check(_check(text), survey)
    return text


def write(text: str, output: str | Path) -> Path:
    """`text` into `output`, whole or not at all; an existing file is left as it is."""
    path = Path(output)
    if path.exists():
        raise KitError(f"{path}: exists; kit init does not overwrite a config: remove it or choose another --output")
    files.write_text(path, text)
    return path


def _guess(survey: Survey, sample_file: str, metric: str, template: str) -> Guess:
    """The first template whose reading of the data holds: boxes, masks, images, sequences, texts, then tables."""
    names = guesses.data_tables(survey, sample_file)
    readers = {
        "detection": lambda: box_guesses.detection_guess(survey, sample_file, names),
        "segmentation": lambda: mask_guesses.segmentation_guess(survey, sample_file, names),
        "cnn": lambda: image_guesses.cnn_guess(survey, sample_file, metric),
        "sequence": lambda: sequence_guesses.sequence_guess(survey, sample_file, names, template or "lstm"),
        "text": lambda: guesses.text_guess(survey, sample_file, names),
        "tabular": lambda: guesses.tabular_guess(survey, sample_file, names, template or "tabular"),
    }
    kinds = {"detection": "detection",
             "segmentation": "segmentation", "cnn": "cnn", "audio": "cnn", "lstm": "sequence", "transformer": "sequence",
             "text": "text", "spans": "text"}
    if template:
        order = [kinds.get(template, "tabular")]
    else:
        order = ["detection", "segmentation", "cnn", "sequence", "text", "tabular"]
    for kind in order:
        found = readers[kind]()
        if found is not None:
            return found
    what = {"detection": "boxes asked for by the sample submission (label confidence x_min y_min x_max y_max) and given "
                         "by a training table (a row a box, or a column of boxes), over image files named by the ids",
            "segmentation": "masks asked for by the sample submission (run-length codes or pixel rows) and given for the "
                            "training images (codes in a table, or mask files)",
            "cnn": "image (or sound) files named by the sample submission's ids (or images in table rows, or a COCO label "
                   "file)",
            "sequence": "a test table of sequences (rows of steps grouped by a column, or rows holding whole sequences)",
            "text": "a test table with free-text columns that the training table has too",
            "tabular": "training and test tables"}
    folders = list(survey.folders.values())
    hint = (f" (the image folders {', '.join(f.source for f in folders[:3])} hold files such as {folders[0].files[0]}, "
            f"which no column of {sample_file} names)") if folders and order[0] in ("detection", "segmentation", "cnn") else ""
    if template:
        raise KitError(f"{survey.data_dir}: found no {what[order[0]]} for template {template}{hint}; check the folder, or "
                       "pass another --template")
    raise KitError(f"{survey.data_dir}: found none of {', '.join(what[k] for k in order)}{hint}; kit's templates "
                   f"({', '.join(templates.names())}) read one of them: pass --template to choose one")


def _metric(survey: Survey, guess: Guess, sample_file: str, metric: str) -> tuple[str, Line, list[str]]:
    """The metric, its line, and the data's cannot-tell lines (the metric's first where it is guessed)."""
    cannot = list(guess.cannot)
    if metric:
        return metric, Line("metric", metric, "given (--metric)"), cannot
    description = next((p for p in sorted(survey.data_dir.glob("*.md")) if p.stem.lower() == "description"), None)
    if description is not None:
        said, words = metric_guess.from_description(description.read_text(encoding="utf-8", errors="replace"))
        why = f"guessed: {description.name} says \"{words}\""
        misfit = metric_records.metric_misfit(guess.template, said) if said else ""
        if misfit:  # "intersection over union" in a text competition's description, or f2 in a mask one's
            cannot.append(f"{description.name} says \"{words}\", but {misfit}: the metric is read from the data")
            said = ""
        if said in LABEL_SETS and metric_guess.from_data(guess, survey.read(sample_file))[0] not in LABEL_SETS:
            said, why = "accuracy", f"{why}, of one label a row: accuracy"  # plant-seedlings' micro-averaged F1
        if said and (said != "bias_auc" or any(c in _train_columns(survey, guess) for c in IDENTITIES)):
            return said, Line("metric", said, why), cannot
    chosen, why, others = metric_guess.from_data(guess, survey.read(sample_file))
    cannot.insert(0, f"the metric from the data alone: {chosen} fits ({why}), and so may {others}; pass --metric")
    return chosen, Line("metric", chosen, f"guessed: {why}"), cannot


def _train_columns(survey: Survey, guess: Guess) -> list[str]:
    train = next((line.value for line in guess.data if line.key == "train"), "")
    return list(survey.read(train).columns) if train in survey.tables else []


def _identities(survey: Survey, guess: Guess) -> Line:
    found = [c for c in IDENTITIES if c in _train_columns(survey, guess)]
    if not found:
        raise KitError(f"metric bias_auc needs the training table's identity columns ({', '.join(IDENTITIES[:3])}, ...), "
                       "and it has none of them; choose another --metric")
    return Line("identity_columns", found, "the identities Jigsaw's unintended-bias metric scores")


def _params(template: str) -> tuple[list[Line], list[Line], list[str]]:
    """[params], [smoke] and what the params cannot tell."""
    params, cannot = [], []
    if template in ("cnn", "audio"):
        params.append(Line("model_name", "efficientnet_b0", "any timm model" + (": a 2-D CNN on log-mel spectrograms"
                                                                               if template == "audio" else "")))
        params.append(Line("pretrained", True, "offline: attach the weights (make weights NAME=...) and set weights_path"))
    if template == "segmentation":
        params.append(Line("model_name", "Unet", "any smp architecture: Unet, UnetPlusPlus, FPN, DeepLabV3Plus, ..."))
        params.append(Line("encoder", "tu-resnet34", "tu-<any timm model>, or one of smp's own"))
        params.append(Line("pretrained", True, "offline: attach the encoder's weights (make weights NAME=resnet34) and "
                                               "set weights_path"))
    if template == "detection":
        params.append(Line("model_name", "resnet34", "any timm model with features_only: Faster R-CNN's backbone"))
        params.append(Line("pretrained", True, "offline: attach the backbone's weights (make weights NAME=resnet34) and "
                                               "set weights_path"))
    if templates.get(template).model_folder:
        params.append(Line("model_path", "deberta-v3-small", "a Hugging Face model folder attached to the kernel"))
        cannot.append("which Hugging Face model: make weights NAME=microsoft/deberta-v3-small publishes one and prints "
                      "the lines that attach it")
    smoke = SMOKE.get(template) or _shipped_smoke(template)
    return params, [Line(k, v) for k, v in smoke.items()], cannot


def _shipped_smoke(template: str) -> dict[str, Any]:
    """[smoke] of the first shipped config of `template`, for a template SMOKE does not list."""
    for name in kit_config.shipped():
        shipped = kit_config.load(name)
        if shipped.spec.template == template:
            return dict(shipped.smoke)
    return {}


def slug_of(data_dir: Path) -> str:
    """The competition's slug: the data folder's name, or its parent's where the folder is public/, data/, ..."""
    for part in reversed(data_dir.resolve().parts):
        if part.lower() not in NOT_SLUGS and slugify(part):
            return slugify(part)
    return "competition"


def title_of(slug: str, template: str) -> str:
    """"<Competition Words> <Template>", cut at a word to Kaggle's 50 characters."""
    suffix = TITLES.get(template, template.title())
    words, kept = slug.replace("-", " ").title().split(), []
    for word in words:
        if len(" ".join([*kept, word, suffix])) > 50:
            break
        kept.append(word)
    return " ".join([*kept, suffix]) if kept else f"Kit {suffix}"


def render(data_dir: Path, slug: str, competition: list[Line], cannot: list[str], guess: Guess, kernel: list[Line],
           params: tuple[list[Line], list[Line], list[str]], skipped: list[str]) -> str:
    """The config's text: each guessed line with its reason, the cannot-tell lines at the end of their table, and
    the files read and left out (`skipped`: "<file>: why") under the heading."""
    given, smoke, unknown = params
    out = [f"# {slug}: drafted by kit init from {data_dir}.",
           "# Each \"guessed\" comment says what its line was read from: check them, and settle each \"cannot tell\".",
           *(f"# not read: {note}" for note in skipped), "", "[competition]", *(_line(x) for x in competition)]
    if cannot and cannot[0].startswith("the metric"):
        out.append(f"# cannot tell: {cannot.pop(0)}")
    out += ["", "[data]", *(_line(Line(x.key, x.value, f"guessed: {x.why}" if x.why else "")) for x in guess.data)]
    out += [f"# cannot tell: {c}" for c in cannot]
    out += ["", "[kernel]", *(_line(x) for x in kernel), "", "[params]", *(_line(x) for x in given)]
    out += [f"# cannot tell: {c}" for c in unknown]
    out += ["", "[smoke]                                 # make smoke's overrides: a model small enough for the CPU",
            *(_line(x) for x in smoke)]
    return "\n".join(out) + "\n"


def _line(line: Line) -> str:
    text = f"{line.key} = {toml(line.value)}"
    if not line.why:
        return text
    return f"{text.ljust(COMMENT_AT - 1)} # {line.why}"


def toml(value: Any) -> str:
    """`value` as a TOML value: a literal string where it holds backslashes ('^(cat|dog)\\.'), else a basic one."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml(v) for v in value) + "]"
    value = str(value)
    if "\\" in value and "'" not in value and not re.search(r"[\x00-\x1f\x7f]", value):
        return f"'{value}'"
    return json.dumps(value, ensure_ascii=False)


def _check(text: str) -> Spec:
    """The draft loads as a config (kit.config), or a KitError says why: kit init never prints one that does not."""
    try:
        return kit_config.parse(tomllib.loads(text), Path("the draft")).spec
    except (KitError, tomllib.TOMLDecodeError) as e:
        raise KitError(f"kit init's draft does not load ({e}); please report it with the folder's file list") from None
