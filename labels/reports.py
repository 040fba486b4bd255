"""Agreement figures, the disposition composition and the label exports, read from the database.

The arithmetic is ``oracles.agreement`` (pure, tested on its own); this module only chooses the
rows. Two interpretations the paper leaves open, fixed here:

* **The human reference of a run** is its validators' majority (``human_majority``: unclear
  abstains, a tie is no majority). A run whose validators all said unclear counts as unclear
  (kept in raw agreement as a disagreement, excluded from κ — the paper's 85/100 beside κ over
  93); a run whose validators tied is left out and counted (``tied``) — a curator adjudicates it.
* **Adjudicated labels are not the reference.** A curator adjudicates after seeing the judge's
  label, so counting rulings as human labels would bias agreement upward; the figures compare
  the judge with blind validator labels only. Adjudications change reported rates, not κ.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from django.db.models import Count, QuerySet

from labels.config import current_source
from labels.models import PRECEDENCE_RULE, PRECEDENCE_TEXT, Adjudication, HumanLabel, JudgeLabel
from oracles.agreement import (
    ADJUDICATED,
    DISPOSITIONS,
    HUMAN_MAJORITY,
    LABELS,
    UNCLEAR,
    confusion_matrix,
    fleiss_kappa,
    human_judge_kappa,
    human_majority,
    precision_recall,
    raw_agreement,
    validator_pair_kappas,
)
from oracles.statistics import wilson
from runs.models import Run

# -- agreement -----------------------------------------------------------------------------------


def machine_sources(runs: QuerySet[Run]) -> list[tuple[str, int]]:
    """Machine label sources present on these runs, with how many runs each labelled (most first)."""
    return [
        (row["source"], row["n"])
        for row in JudgeLabel.objects.filter(run__in=runs)
        .values("source")
        .annotate(n=Count("pk"))
        .order_by("-n", "source")
    ]


def default_source(runs: QuerySet[Run]) -> str | None:
    """The current source when it has labels here, else the judge source with most labels, else any."""
    present = machine_sources(runs)
    names = [s for s, _ in present]
    current = current_source()
    if current in names:
        return current
    judges = [s for s in names if s.startswith("judge:")]
    candidates = judges or names
    return candidates[0] if candidates else None


def human_reference(labels: Sequence[str]) -> str | None:
    """The run's human label for comparison with the judge: the majority, unclear when every vote
    was unclear, None when validators tied."""
    majority = human_majority(labels)
    if majority is not None:
        return majority
    if labels and all(label == UNCLEAR for label in labels):
        return UNCLEAR
    return None


def _ratio(x: float | None) -> float | None:
    return None if x is None else round(float(x), 6)


def agreement_data(runs: QuerySet[Run], source: str | None) -> dict[str, Any]:
    """Every agreement figure for these runs against the machine labels from ``source``."""
    human_rows = list(
        HumanLabel.objects.filter(run__in=runs)
        .order_by("run_id", "validator__username")
        .values_list("run_id", "validator__username", "label")
    )
    votes: dict[int, list[str]] = defaultdict(list)
    for run_id, _, label in human_rows:
        votes[run_id].append(label)
    machine: dict[int, str] = {}
    if source:
        machine = dict(JudgeLabel.objects.filter(run__in=runs, source=source).values_list("run_id", "label"))
    rows: list[tuple[int, str, str]] = []
    tied = no_machine = 0
    for run_id, labels in votes.items():
        reference = human_reference(labels)
        if reference is None:
            tied += 1
            continue
        if run_id not in machine:
            no_machine += 1
            continue
        rows.append((run_id, reference, machine[run_id]))

    raw = raw_agreement(rows)
    kappa = human_judge_kappa(rows)
    matrix = confusion_matrix(rows)  # humans by row (with unclear), judge by column
    scores = precision_recall(rows)
    pairs = validator_pair_kappas(human_rows)
    fleiss = fleiss_kappa(human_rows)
    per_validator = Counter(v for _, v, _ in human_rows)
    unclear_by = Counter(v for _, v, label in human_rows if label == UNCLEAR)

    return {
        "source": source,
        "runs_with_human_labels": len(votes),
        "human_labels": len(human_rows),
        "compared": len(rows),
        "tied": tied,
        "no_machine_label": no_machine,
        "raw_agreement": raw.as_dict(),
        "kappa": {k: (_ratio(v) if isinstance(v, float) else v) for k, v in kappa.as_dict().items()},
        "confusion": {
            "rows": "human",
            "columns": "judge",
            "row_labels": list(LABELS),
            "column_labels": list(DISPOSITIONS),
            "counts": [[matrix.cell(h, j) for j in DISPOSITIONS] for h in LABELS],
        },
        "precision_recall": [scores[label].as_dict() for label in DISPOSITIONS],
        "validators": [
            {"validator": name, "labels": n, "unclear": unclear_by.get(name, 0)}
            for name, n in sorted(per_validator.items(), key=lambda kv: (-kv[1], kv[0]))
        ],
        "validator_pairs": [
            {
                "validator_a": p.validator_a,
                "validator_b": p.validator_b,
                "overlap": p.overlap,
                "n": p.kappa.n,
                "excluded": p.kappa.excluded,
                "kappa": _ratio(p.kappa.kappa),
                "low": _ratio(p.kappa.low),
                "high": _ratio(p.kappa.high),
            }
            for p in pairs
        ],
        "fleiss": {k: (_ratio(v) if isinstance(v, float) else v) for k, v in fleiss.as_dict().items()},
        "reference_rule": (
            "Human reference per run = the validators' majority (unclear abstains; all-unclear counts as unclear; "
            "ties are left out). Adjudicated labels are not used: curators rule after seeing the judge."
        ),
    }


def agreement_tables(data: Mapping[str, Any]) -> dict[str, tuple[list[str], list[list[Any]]]]:
    """The agreement figures as flat tables (header, rows) for CSV export, by table name.

    A figure withheld from a validator-only account (``overeager.blind.figures``) is empty here.
    """
    k = data.get("kappa") or {}
    f = data.get("fleiss") or {}
    raw = data.get("raw_agreement") or {}
    summary = [
        ["source", data.get("source")],
        ["runs_with_human_labels", data.get("runs_with_human_labels")],
        ["human_labels", data.get("human_labels")],
        ["compared_runs", data.get("compared")],
        ["tied_runs_left_out", data.get("tied")],
        ["runs_without_machine_label", data.get("no_machine_label")],
        ["raw_agreement_agree", raw.get("agree")],
        ["raw_agreement_n", raw.get("n")],
        ["raw_agreement_share", raw.get("share")],
        ["kappa", k.get("kappa")],
        ["kappa_n", k.get("n")],
        ["kappa_excluded_unclear", k.get("excluded")],
        ["kappa_se", k.get("se")],
        ["kappa_low", k.get("low")],
        ["kappa_high", k.get("high")],
        ["kappa_method", k.get("method")],
        ["fleiss_kappa", f.get("kappa")],
        ["fleiss_runs_used", f.get("runs_used")],
        ["fleiss_excluded_labels", f.get("excluded_labels")],
        ["fleiss_low", f.get("low")],
        ["fleiss_high", f.get("high")],
    ]
    confusion = data.get("confusion") or {"column_labels": [], "row_labels": [], "counts": []}
    return {
        "summary": (["metric", "value"], summary),
        "confusion": (
            ["human \\ judge", *confusion["column_labels"]],
            [[label, *counts] for label, counts in zip(confusion["row_labels"], confusion["counts"], strict=True)],
        ),
        "precision_recall": (
            ["label", "true_positives", "judge_total", "human_total", "precision", "recall"],
            [
                [r.get(c) for c in ("label", "true_positives", "judge_total", "human_total", "precision", "recall")]
                for r in data.get("precision_recall") or []
            ],
        ),
        "validators": (
            ["validator", "labels", "unclear"],
            [[v.get("validator"), v.get("labels"), v.get("unclear")] for v in data.get("validators") or []],
        ),
        "validator_pairs": (
            ["validator_a", "validator_b", "overlap", "n", "excluded_unclear", "kappa", "low", "high"],
            [
                [p.get(c) for c in ("validator_a", "validator_b", "overlap", "n", "excluded", "kappa", "low", "high")]
                for p in data.get("validator_pairs") or []
            ],
        ),
    }


# -- composition ---------------------------------------------------------------------------------

COMPOSITION_BY: dict[str, tuple[str, tuple[str, ...]]] = {
    "system": ("system (framework × model)", ("campaign__sut__framework__slug", "campaign__sut__model__slug")),
    "s_level": ("intent clarity (S)", ("s_level",)),
    "b_level": ("target certainty (B)", ("b_level",)),
    "r_level": ("blast radius (R)", ("r_level",)),
    "campaign": ("campaign", ("campaign__name",)),
    "family": ("task family", ("family",)),
    "surface": ("control surface", ("surface",)),
    "all": ("all non-action runs", ()),
}
COLOURS = {"clarification": "#3d6f99", "refusal": "#b4470c", "deferment": "#d8a02a", "empty": "#9aa3ab"}


def _group_name(by: str, values: Sequence[Any]) -> str:
    if by == "system":
        return f"{values[0]} × {values[1]}"
    if by in ("s_level", "b_level", "r_level"):
        return f"{by[0].upper()}{values[0]}" if values[0] is not None else "no level (SNARE)"
    if by == "all":
        return "all"
    return str(values[0]) if values[0] not in (None, "") else "—"


def source_bucket(column: str) -> str:
    """``Run.disposition_source`` → adjudicated / human-majority / judge / fallback."""
    if column in (ADJUDICATED, HUMAN_MAJORITY):
        return column
    return column.split(":", 1)[0] if column else "unlabelled"


def _shares(counts: Mapping[str, int], n: int) -> tuple[dict[str, float | None], dict[str, list[float]]]:
    shares: dict[str, float | None] = {}
    intervals: dict[str, list[float]] = {}
    for label in DISPOSITIONS:
        rate = wilson(counts.get(label, 0), n)
        shares[label] = rate.rate
        intervals[label] = [round(rate.low, 6), round(rate.high, 6)]
    return shares, intervals


def disposition_composition(runs: QuerySet[Run], by: str = "system") -> dict[str, Any]:
    """Counts and shares of clarification / refusal / deferment / empty among the non-action runs.

    ``runs`` is any Run queryset (a campaign's, a matrix's, an UnderSpecBench selection); only its
    scored runs with ``acted = False`` count. ``by`` is one of ``COMPOSITION_BY``: system, s_level,
    b_level, r_level, campaign, family, surface, all. Shares are among *labelled* non-action runs
    (``n``), with Wilson 95% intervals; ``unlabelled`` counts those without a disposition yet;
    ``sources`` says which rule step gave each label (adjudicated / human-majority / judge /
    fallback). ``traces`` is Plotly-ready: one stacked bar trace per disposition.
    """
    if by not in COMPOSITION_BY:
        raise ValueError(f"by must be one of {', '.join(COMPOSITION_BY)}, got {by!r}")
    title, fields = COMPOSITION_BY[by]
    non_action = runs.filter(status=Run.Status.SCORED, acted=False)
    groups: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row in non_action.values(*fields, "disposition", "disposition_source").annotate(n=Count("pk")).order_by():
        key = tuple(row[f] for f in fields)
        group = groups.setdefault(key, {"counts": Counter(), "sources": Counter(), "unlabelled": 0})
        if row["disposition"] in DISPOSITIONS:
            group["counts"][row["disposition"]] += row["n"]
            group["sources"][source_bucket(row["disposition_source"])] += row["n"]
        else:
            group["unlabelled"] += row["n"]

    def sort_key(key: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple((v is None, v if v is not None else 0) if not isinstance(v, str) else (False, v) for v in key)

    out_groups = []
    for key in sorted(groups, key=sort_key):
        g = groups[key]
        n = sum(g["counts"].values())
        shares, intervals = _shares(g["counts"], n)
        out_groups.append(
            {
                "group": _group_name(by, key),
                "n": n,
                "unlabelled": g["unlabelled"],
                "counts": {label: g["counts"].get(label, 0) for label in DISPOSITIONS},
                "shares": shares,
                "intervals": intervals,
                "sources": dict(sorted(g["sources"].items())),
            }
        )
    names = [g["group"] for g in out_groups]
    traces = [
        {
            "type": "bar",
            "name": label,
            "x": names,
            "y": [g["shares"][label] or 0 for g in out_groups],
            "customdata": [
                [g["counts"][label], g["n"], g["intervals"][label][0], g["intervals"][label][1]] for g in out_groups
            ],
            "marker": {"color": COLOURS[label]},
            "hovertemplate": (
                "<b>%{x}</b><br>" + label + ": %{customdata[0]} of %{customdata[1]} (%{y:.0%})"
                "<br>Wilson 95%: %{customdata[2]:.0%}–%{customdata[3]:.0%}<extra></extra>"
            ),
        }
        for label in DISPOSITIONS
    ]
    total_counts: Counter[str] = Counter()
    total_sources: Counter[str] = Counter()
    for g in out_groups:
        total_counts.update(g["counts"])
        total_sources.update(g["sources"])
    total_n = sum(total_counts.values())
    total_shares, total_intervals = _shares(total_counts, total_n)
    return {
        "by": by,
        "by_title": title,
        "labels": list(DISPOSITIONS),
        "groups": out_groups,
        "total": {
            "n": total_n,
            "unlabelled": sum(g["unlabelled"] for g in out_groups),
            "counts": {label: total_counts.get(label, 0) for label in DISPOSITIONS},
            "shares": total_shares,
            "intervals": total_intervals,
            "sources": dict(sorted(total_sources.items())),
        },
        "traces": traces,
        "layout": {
            "barmode": "stack",
            "yaxis": {"tickformat": ".0%", "range": [0, 1], "title": {"text": "share of labelled non-action runs"}},
            "xaxis": {"title": {"text": title}, "automargin": True},
            "legend": {"orientation": "h", "y": -0.25},
        },
        "rule": PRECEDENCE_RULE,
        "rule_text": PRECEDENCE_TEXT,
    }


def composition_rows(data: Mapping[str, Any]) -> tuple[list[str], list[list[Any]]]:
    header = [data["by"], "n", "unlabelled"]
    header += [f"{label}_count" for label in DISPOSITIONS] + [f"{label}_share" for label in DISPOSITIONS]
    header += ["source_adjudicated", "source_human_majority", "source_judge", "source_fallback", "rule"]
    rows = []
    for g in data["groups"]:
        rows.append(
            [g["group"], g["n"], g["unlabelled"]]
            + [g["counts"][label] for label in DISPOSITIONS]
            + [g["shares"][label] for label in DISPOSITIONS]
            + [g["sources"].get(k, 0) for k in (ADJUDICATED, HUMAN_MAJORITY, "judge", "fallback")]
            + [data["rule"]]
        )
    return header, rows


# -- label exports -------------------------------------------------------------------------------


def label_rows(runs: QuerySet[Run]) -> tuple[list[str], list[list[Any]]]:
    """Every label of these runs, one row per label (machine, human, adjudication), oldest first."""
    header = ["run", "campaign", "kind", "by", "label", "text", "created", "updated"]
    rows: list[list[Any]] = []
    for j in JudgeLabel.objects.filter(run__in=runs).select_related("run__campaign").order_by("run_id", "created"):
        rows.append([j.run_id, j.run.campaign.name, j.kind, j.source, j.label, j.rationale, j.created.isoformat(), ""])
    for h in (
        HumanLabel.objects.filter(run__in=runs)
        .select_related("run__campaign", "validator")
        .order_by("run_id", "created")
    ):
        rows.append(
            [h.run_id, h.run.campaign.name, "human", h.validator.get_username(), h.label, h.note,
             h.created.isoformat(), h.updated.isoformat()]
        )  # fmt: skip
    for a in (
        Adjudication.objects.filter(run__in=runs)
        .select_related("run__campaign", "curator")
        .order_by("run_id", "created")
    ):
        rows.append(
            [a.run_id, a.run.campaign.name, "adjudication", a.curator.get_username(), a.label or "(withdrawn)",
             a.reason, a.created.isoformat(), ""]
        )  # fmt: skip
    rows.sort(key=lambda r: (r[0], r[6]))
    return header, rows


def run_rows(runs: QuerySet[Run]) -> tuple[list[str], list[list[Any]]]:
    """One row per non-action run: where it ran, each kind of label, and the reported one with its rule step."""
    header = [
        "run", "campaign", "framework", "model", "family", "s_level", "b_level", "r_level", "archetype", "consent",
        "machine_label", "machine_source", "human_votes", "human_majority", "adjudicated",
        "final_label", "final_source", "review", "rule",
    ]  # fmt: skip
    rows: list[list[Any]] = []
    qs = (
        runs.filter(status=Run.Status.SCORED, acted=False)
        .select_related("campaign__sut__framework", "campaign__sut__model", "label_summary")
        .order_by("pk")
    )
    for run in qs.iterator(chunk_size=1000):
        s = getattr(run, "label_summary", None)
        votes = ";".join(f"{k}={v}" for k, v in sorted((s.human_votes or {}).items())) if s else ""
        rows.append(
            [
                run.pk, run.campaign.name, run.campaign.sut.framework.slug, run.campaign.sut.model.slug, run.family,
                run.s_level, run.b_level, run.r_level, run.archetype, run.consent,
                s.machine_label if s else "", s.machine_source if s else "", votes,
                s.human_majority if s else "", s.adjudicated if s else "",
                s.final_label if s else run.disposition, s.final_source if s else run.disposition_source,
                s.review if s else "", PRECEDENCE_RULE,
            ]
        )  # fmt: skip
    return header, rows


def as_records(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[dict[str, Any]]:
    return [dict(zip(header, row, strict=True)) for row in rows]
