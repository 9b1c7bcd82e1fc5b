"""The docs' code layout page stays true to the package and to its import contract."""

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "n8n_deepeval_pipeline"
PAGE = (ROOT / "docs" / "reference" / "layout.md").read_text(encoding="utf-8")
_MODULE = re.compile(r"^[a-z0-9_]+\.py$")


def section(title: str) -> str:
    return PAGE.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def layout_block() -> list[str]:
    return section("Modules").split("```\n", 2)[1].splitlines()


def modules_in_layout() -> set[str]:
    """Every `x.py` the layout names, as a path inside the package (a folder opens a level)."""
    folders: list[tuple[int, str]] = []  # (indent, folder) from the package down
    found = set()
    for line in layout_block():
        indent = len(line) - len(line.lstrip())
        tokens = line.split()
        if not tokens:
            continue
        while folders and folders[-1][0] >= indent:  # a sibling or an uncle closes a folder
            folders.pop()
        if tokens[0].endswith("/"):
            folders.append((indent, tokens[0]))
        inside = "".join(folder for _, folder in folders)
        found |= {inside + token for token in tokens if _MODULE.match(token)}
    return found


def modules_in_package() -> set[str]:
    return {
        "n8n_deepeval_pipeline/" + str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if path.name != "__init__.py" or path.parent == PACKAGE
    }


def test_the_layout_names_every_module_of_the_package_and_no_other():
    listed, present = modules_in_layout(), modules_in_package()
    assert sorted(present - listed) == [], "modules missing from the docs' layout page"
    assert sorted(listed - present) == [], "modules in the docs' layout page that are gone"


def test_the_layers_listed_are_the_import_contract():
    items = re.findall(r"^\d+\. (.+)$", section("Layers"), flags=re.MULTILINE)
    listed = [" | ".join(re.findall(r"`(\w+)`", item)) for item in items]
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    (layers,) = [
        contract["layers"]
        for contract in pyproject["tool"]["importlinter"]["contracts"]
        if contract["type"] == "layers"
    ]
    assert listed == [" | ".join(re.findall(r"\w+", layer)) for layer in layers]
