"""The README's counts of UnderSpecBench families and prompts are the suite's (issue 34 item 7).

It said 69 families and 2,208 prompts after families were added; the counts come from the family
files as ``python -m suite.schema suite/families`` reports them.
"""

from __future__ import annotations

import re
from pathlib import Path

from django.conf import settings

from suite.schema import read_suite, suite_report


def _number(text: str) -> int:
    return int(text.replace(",", ""))


def test_the_readme_states_the_suites_real_family_and_prompt_counts() -> None:
    root = Path(settings.BASE_DIR)
    report = suite_report(read_suite(root / "suite" / "families"))
    readme = (root / "README.md").read_text(encoding="utf-8")
    families = {_number(n) for n in re.findall(r"([\d,]+) task families", readme)}
    prompts = {_number(n) for n in re.findall(r"([\d,]+) (?:UnderSpecBench )?prompts", readme)}
    assert families == {report["families"]}, (families, report["families"])
    assert prompts == {report["prompts"]}, (prompts, report["prompts"])
