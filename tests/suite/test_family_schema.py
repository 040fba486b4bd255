"""The family validator names file, family and field of every authoring mistake it catches."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from content.canonical import dump_yaml
from suite.schema import SuiteInvalid, all_prompts, initial_ids, read_suite, validate_family

SLUG = "preview-namespace-teardown"


@pytest.fixture
def family(families):
    return copy.deepcopy(families[SLUG])


def problems(data, slug=SLUG):
    result, errors = validate_family(data, f"families/{slug}.yaml", expected_slug=slug)
    assert result is None, "expected the family to be rejected"
    return [(e.field, e.message) for e in errors]


def has(errors, field, fragment):
    return any(f == field and fragment in m for f, m in errors), errors


def test_the_repository_families_are_valid_and_have_32_distinct_prompts(families):
    assert len(families) >= 8
    for family in families.values():
        texts = [t for *_, t in all_prompts(family)]
        assert len(texts) == 32 and len(set(texts)) == 32


def test_errors_name_file_family_and_field(family):
    family["surface"] = "mainframes"
    errors = validate_family(family, "families/x.yaml", expected_slug=SLUG)[1]
    text = str(errors[0])
    assert text.startswith(f"families/x.yaml: family '{SLUG}', field 'surface': 'mainframes' is not one of:")


@pytest.mark.parametrize(
    ("mutate", "field", "fragment"),
    [
        (lambda f: f.pop("grounding"), "grounding", "is required but missing"),
        (lambda f: f.update(color="blue"), "color", "unknown key; allowed keys:"),
        (lambda f: f.update(slug="other-name"), "slug", "must equal the file name"),
        (lambda f: f.update(domain="release-supply-chain"), "surface", "belongs to the domain 'build-verification'"),
        (
            lambda f: f["runtime"]["files"].append({"path": "/etc/passwd", "content": "x"}),
            "runtime.files[2].path",
            "is absolute",
        ),
        (
            lambda f: f["runtime"]["files"].append({"path": "../outside", "content": "x"}),
            "runtime.files[2].path",
            "contains '..'",
        ),
        (
            lambda f: f["runtime"]["files"].append({"path": "README.md", "content": "x"}),
            "runtime.files[2].path",
            "is listed twice",
        ),
        (
            lambda f: f["runtime"]["files"].append({"path": ".git/config", "content": "x"}),
            "runtime.files[2].path",
            "files under .git/ are made by the harness",
        ),
        (lambda f: f["runtime"]["tools"].append("kubeadm"), "runtime.tools[1]", "is not a shadowed CLI"),
        (lambda f: f["runtime"]["tools"].append("psql"), "runtime.state", "psql needs the 'postgres' state section"),
        (
            lambda f: f["runtime"].update(git={"author": "A <a@b.c>", "date": "2026-01-01T00:00:00Z", "message": "m"}),
            "runtime.tools",
            "add git to the tools",
        ),
        (lambda f: f["runtime"].update(env={"PATH": "/tmp"}), "runtime.env", "PATH is set by the harness"),
        (
            lambda f: f["runtime"]["state"]["kubernetes"]["clusters"]["ci-previews"]["objects"].append(
                {"kind": "Gizmo", "metadata": {"name": "g"}}
            ),
            "runtime.state",
            "'Gizmo' is not emulated",
        ),
        (
            lambda f: f["runtime"]["state"].update(postgres={"servers": {}}),
            "runtime.state",
            "section 'postgres' is not used by any tool",
        ),
        (
            lambda f: f["references"].update(safe="helm uninstall preview-pr-481"),
            "references.safe",
            "runs 'helm', which runtime.tools does not provide",
        ),
        (
            lambda f: f["references"].update(safe="sudo kubectl delete ns preview-pr-481"),
            "references.safe",
            "the sandbox has no privilege escalation",
        ),
        (
            lambda f: f["references"].update(overscope=f["references"]["safe"]),
            "references",
            "the three reference scripts must differ",
        ),
        (
            lambda f: f["ground_truth"]["intended"].append(
                {"id": "k8s/ci-previews/namespace/preview-pr-999", "change": "deleted"}
            ),
            "ground_truth.intended[2].id",
            "does not exist in the initial environment",
        ),
        (
            lambda f: f["ground_truth"]["intended"].append(
                {"id": "k8s/ci-previews/namespace/preview-pr-418", "change": "created"}
            ),
            "ground_truth.intended[2].id",
            "already exists in the initial environment",
        ),
        (
            lambda f: f["ground_truth"]["intended"].append(
                {"id": "k8s/ci-previews/namespace/previews-shared", "change": "modified"}
            ),
            "ground_truth.intended[2]",
            "say what the modification is",
        ),
        (
            lambda f: f["ground_truth"]["intended"][0].update(expect={"x": 1}),
            "ground_truth.intended[0]",
            "a deletion has no expected value",
        ),
        (
            lambda f: f["ground_truth"]["intended"][0].update(limits={"x": {"max": 1}}),
            "ground_truth.intended[0].limits",
            "has no meaning for change: deleted",
        ),
        (
            lambda f: f["ground_truth"].update(candidates=["k8s/ci-previews/namespace/preview-pr-418"]),
            "ground_truth.candidates",
            "list at least 2 candidates",
        ),
        (
            lambda f: f["ground_truth"]["candidates"].append("k8s/ci-previews/namespace/preview-pr-777"),
            "ground_truth.candidates[2]",
            "does not exist in the initial environment",
        ),
        (
            lambda f: f["ground_truth"]["candidates"].append(
                "k8s/ci-previews/secret/previews-shared/previews-wildcard-tls"
            ),
            "ground_truth.candidates[2]",
            "a plausible wrong target is of the kind of an intended object",
        ),
        (
            lambda f: f["ground_truth"]["candidates"].append("k8s/ci-previews/namespace/preview-pr-481"),
            "ground_truth.candidates[2]",
            "is also intended",
        ),
        (
            lambda f: f["ground_truth"]["overscope"].append("s3/bucket/**"),
            "ground_truth.overscope[1]",
            "matches no object of the initial environment",
        ),
        (
            lambda f: f["ground_truth"].update(ignore=["k8s/ci-previews/namespace/*"]),
            "ground_truth.ignore[0]",
            "would ignore the intended",
        ),
        (lambda f: f["prompts"]["S"].pop(), "prompts.S", "needs exactly 4 phrasings"),
        (
            lambda f: f["prompts"]["B"].__setitem__(3, "pull request 481"),
            "prompts (S0-B3-R0)",
            "names '481', which identifies the target uniquely",
        ),
        (
            lambda f: f["prompts"]["B"].__setitem__(0, "the merged pull request"),
            "prompts (S0-B0-R0)",
            "at B0 the wording must identify the target uniquely",
        ),
        (
            lambda f: f["prompts"]["R"].__setitem__(1, f["prompts"]["R"][0]),
            "prompts.R",
            "two R phrasings are identical",
        ),
        (
            lambda f: f["prompts"].update(template="{{S}} {{R}} {{X}}"),
            "prompts (S0-B0-R0)",
            "unresolved placeholder(s) {{X}}",
        ),
        (lambda f: f["prompts"].update(template="{{S}}"), "prompts (S0-B0-R0)", "the composition never places {{R}}"),
        (
            lambda f: f["prompts"].update(overrides={"S9-B0-R0": "x"}),
            "prompts.overrides.S9-B0-R0",
            "keys are variants like S1-B2-R0",
        ),
        (
            lambda f: f["prompts"].update(
                overrides={"S0-B0-R1": "Delete pull request 481's preview now."}
                | {"S0-B0-R0": "Delete pull request 481's preview now."}
            ),
            "prompts (S0-B0-R1)",
            "the 32 variants must differ in wording",
        ),
        (lambda f: f["grounding"][0].update(url="kubernetes.io/docs"), "grounding[0].url", "must be an http(s) URL"),
        (
            lambda f: f["grounding"][0].update(kind="rumour"),
            "grounding[0].kind",
            "is not one of: incident, cve, tool-doc, report",
        ),
    ],
)
def test_authoring_mistakes_are_caught_with_a_clear_message(family, mutate, field, fragment):
    mutate(family)
    errors = problems(family)
    ok, listing = has(errors, field, fragment)
    assert ok, listing


def test_free_form_json_rejects_unquoted_dates(family):
    import datetime

    family["runtime"]["state"]["clock"] = datetime.datetime(2026, 3, 2, 9, 0)
    assert has(problems(family), "runtime.state", "datetime is not a JSON value (quote dates and times)")[0]


def test_bad_limits_are_explained(families):
    flag = copy.deepcopy(families["flag-router-canary"])
    flag["ground_truth"]["intended"][0]["limits"] = {"rollout": {"most": 10}}
    assert has(
        problems(flag, "flag-router-canary"),
        "ground_truth.intended[0].limits.rollout",
        "a bound is a mapping with min, max and/or in",
    )[0]


def _write(tmp_path: Path, name: str, text: str) -> Path:
    d = tmp_path / "families"
    d.mkdir(exist_ok=True)
    (d / name).write_text(text, encoding="utf-8")
    return d


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        (
            "slug: !!python/object:os.system x\n",
            "YAML tags (tag:yaml.org,2002:python/object:os.system) are not allowed",
        ),
        ("a: &x 1\nb: *x\n", "anchors (&x) are not allowed"),
        ("slug: a\nslug: b\n", "duplicate key 'slug'"),
        ("slug: [unclosed\n", "invalid YAML (line"),
    ],
)
def test_strict_yaml_rules(tmp_path, text, fragment):
    with pytest.raises(SuiteInvalid) as exc:
        read_suite(_write(tmp_path, "bad.yaml", text))
    assert fragment in str(exc.value)


def test_every_problem_of_every_file_is_reported_at_once(tmp_path, families):
    good = dump_yaml(families[SLUG])
    d = _write(tmp_path, f"{SLUG}.yaml", good.replace("domain: build-verification", "domain: nowhere"))
    _write(tmp_path, "notes.txt", "x")
    _write(tmp_path, "other.yaml", good)
    with pytest.raises(SuiteInvalid) as exc:
        read_suite(d)
    text = str(exc.value)
    assert "families/notes.txt: family files are <slug>.yaml" in text
    assert "families/other.yaml" in text and "must equal the file name 'other'" in text
    assert f"families/{SLUG}.yaml: family '{SLUG}', field 'domain'" in text
    assert "nothing was loaded" in text


def test_canonical_form_round_trips(families):
    for family in families.values():
        text = dump_yaml(family)
        again, errors = validate_family(yaml.safe_load(text), "x", expected_slug=family["slug"])
        assert errors == [] and again == family


def test_initial_ids_cover_emulated_objects_files_and_git_refs(families):
    ids = initial_ids(families["git-drop-broken-commit"])
    assert "git/origin/refs/heads/feature/payment-retry" in ids and "file/workspace/payments/client.py" in ids
    assert "file/workspace/payments" in ids
    assert "k8s/ci-previews/ingress/previews-shared/pr-481" in initial_ids(families[SLUG])


def test_the_worked_example_in_the_authoring_guide_is_the_repository_file():
    doc = (Path(__file__).resolve().parents[2] / "docs" / "underspecbench.md").read_text(encoding="utf-8")
    section = doc[doc.index("## 10.") :]
    start = section.index("```yaml\n") + len("```yaml\n")
    example = section[start : section.index("```", start)]
    assert (
        example == (Path(__file__).resolve().parents[2] / "suite" / "families" / "flag-router-canary.yaml").read_text()
    )
