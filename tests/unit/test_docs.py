"""The README and docs/: every relative link names a file the repository has (the README is a guide whose
topics live in docs/, so a moved page must not leave a dead link behind)."""

from __future__ import annotations

import re

from tests.helpers import ROOT

LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_every_relative_link_of_the_readme_and_docs_resolves() -> None:
    pages = [ROOT / "README.md", ROOT / "results" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    dead = [f"{page.relative_to(ROOT)}: {target}" for page in pages for target in LINK.findall(page.read_text())
            if "://" not in target and not (page.parent / target).exists()]
    assert dead == []


def test_the_readme_is_a_guide_not_a_manual() -> None:
    assert len((ROOT / "README.md").read_text().splitlines()) <= 200
