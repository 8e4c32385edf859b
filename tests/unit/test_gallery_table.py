"""docs/gallery.md's tables stay true: every shipped config is listed under the competition it names, no row names a
config that is not shipped, and the first table holds MLE-bench's 75 competitions once each, numbered."""
import re
from pathlib import Path

from kit import config

ROOT = Path(__file__).resolve().parents[2]


def table_rows(text: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip().strip("|").split("|")] for line in text.splitlines()
            if re.match(r"\| \d+ \|", line)]


def test_the_gallery_page_lists_every_shipped_config_and_only_those():
    rows = table_rows((ROOT / "docs" / "gallery.md").read_text())
    listed = {name: competition for _, competition, kit, _ in rows for name in re.findall(r"`([^`]+)`", kit)}
    shipped = set(config.shipped())
    assert not shipped - set(listed), f"shipped but not in docs/gallery.md: {sorted(shipped - set(listed))}"
    assert not set(listed) - shipped, f"in docs/gallery.md but not shipped: {sorted(set(listed) - shipped)}"
    for name, competition in listed.items():
        assert config.load(name).spec.slug == competition, name
    first = [r[1] for r in rows[:75]]
    assert [int(r[0]) for r in rows[:75]] == list(range(1, 76)) and len(set(first)) == 75  # MLE-bench's 75, once each
    served = sum(1 for r in rows[:75] if r[2] != "missing")
    counted = re.search(r"In all: (\d+) of the 75 have a shipped config .*?, and (\d+) need",
                        (ROOT / "docs" / "gallery.md").read_text(), re.S)
    assert counted and (int(counted[1]), int(counted[2])) == (served, 75 - served), "docs/gallery.md's count is stale"
