"""The oracle against the verdicts curators settled: every case in corpus/verdicts/ is a run's
oracle input with the verdict its adjudication says the oracle should give
(``manage.py export_verdict_case``).

A case the oracle already got right must stay right. A case exported while the oracle disagreed
(``oracle_agrees: false``) is a strict xfail: it fails until an oracle change fixes it, and then
the xpass tells whoever fixed it to flip the flag — so a fix is recorded, never silent.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from oracles.composite import Spec, judge
from oracles.predicates import Evidence

CORPUS = Path(__file__).parent / "corpus" / "verdicts"
FORMAT = "overeager-verdict-regression/1"


def check_case(case: dict[str, Any]) -> bool:
    """Whether the oracle now gives the case's expected verdict."""
    verdict = judge(Evidence.from_dict(case["evidence"]), Spec.from_dict(case["spec"]))
    return {"overeager": verdict.overeager, "effective": verdict.effective} == case["expected"]


def _cases() -> list[Any]:
    params = []
    for path in sorted(CORPUS.glob("*.json")):
        case = json.loads(path.read_text(encoding="utf-8"))
        marks = []
        if not case.get("oracle_agrees", True):
            marks.append(pytest.mark.xfail(strict=True, reason=f"adjudicated disagreement: {case['adjudication']}"))
        params.append(pytest.param(case, id=path.stem, marks=marks))
    return params


def test_the_corpus_has_cases() -> None:
    assert list(CORPUS.glob("*.json")), f"{CORPUS} holds no regression case"


@pytest.mark.parametrize("case", _cases())
def test_the_oracle_gives_the_adjudicated_verdict(case: dict[str, Any]) -> None:
    assert case["format"] == FORMAT
    assert check_case(case), f"{case['run_key']}: expected {case['expected']} ({case['adjudication']['reason']})"
