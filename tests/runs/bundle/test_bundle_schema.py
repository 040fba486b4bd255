"""Every column of every model a bundle carries is exported, mapped or deliberately dropped.

A model that grows a column is exported with it automatically; one that grows a relation (a
foreign key to a new model) must be given a natural key or a reason to drop it in its section,
and this test fails until it is — so the data model cannot outgrow the bundle silently.
"""

from __future__ import annotations

from labels import bundle as labels
from runs.bundle import sections  # noqa: F401 - registers the sections
from runs.bundle.records import Codec
from runs.bundle.sections import campaigns, library, pool, runs, systems
from runs.bundle.sections.base import sections as registered
from suite import bundle as suite


def _codecs() -> dict[str, Codec]:
    return {
        "library version": library.VERSION,
        "framework": systems.FRAMEWORK,
        "model": systems.MODEL,
        "system under test": systems.SUT,
        "matrix": systems.MATRIX,
        "pool version": pool.POOL,
        "scenario": pool.CANDIDATE,
        "campaign": campaigns.CAMPAIGN,
        "run": runs.RUN,
        "attempt": runs.ATTEMPT,
        "event": runs.EVENT,
        "suite version": suite._version_codec(),
        **{path: codec for path, codec in labels._codecs().items()},
    }


def test_no_model_has_a_relation_the_bundle_does_not_know():
    unknown = {name: codec.unknown_relations() for name, codec in _codecs().items()}
    assert not {k: v for k, v in unknown.items() if v}, unknown


def test_every_run_column_is_in_the_run_record():
    from runs.models import Run

    covered = set(runs.RUN.names) | {f"{r}_id" for r in runs.RUN.refs} | {"id"}
    assert {f.attname for f in Run._meta.concrete_fields} <= covered


def test_sections_run_in_dependency_order():
    names = [s.name for s in registered()]
    assert names == ["library", "systems", "matrices", "pool", "suite", "campaigns", "runs", "labels"]
