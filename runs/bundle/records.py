"""Model rows as bundle records and back: every column, database ids and install paths left out.

A ``Codec`` covers all concrete fields of a model.  Plain columns are copied (datetimes as ISO
8601 with microseconds and offset, UUIDs as strings, JSON as stored); relations are not copied —
each must be named either in ``refs`` (the section writes a natural key for it: a uuid, a slug, a
digest) or in ``drop`` (deliberately left out, e.g. the user who clicked "start").  A relation the
codec does not know is an error at export *and* import time, and
``tests/bundles/test_bundle_schema.py`` fails on it: a model that grows a column or a foreign key
cannot silently fall out of the bundle.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from django.db import models

from harness.bundle.format import BundleError


def plain(value: Any) -> Any:
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)  # money: exact, not a float that rounds
    if isinstance(value, uuid.UUID):
        return str(value)
    return value


class Codec:
    def __init__(
        self,
        model: type[models.Model],
        *,
        refs: Iterable[str] = (),
        drop: Iterable[str] = (),
        ref_models: Iterable[str] = (),
    ) -> None:
        self.model = model
        self._refs = set(refs)
        self.drop = set(drop) | {"id"}
        # Relations to these models (app_label.Model) are refs whatever their field is called:
        # e.g. a run's link to its UnderSpecBench prompt, which the section resolves by natural key.
        self.ref_models = set(ref_models)
        self._fields: list[models.Field[Any, Any]] | None = None

    @property
    def refs(self) -> set[str]:
        return self._refs | set(self.refs_to_models())

    def refs_to_models(self) -> dict[str, str]:
        """Relation field name → related model label, for the relations ``ref_models`` covers."""
        out: dict[str, str] = {}
        for f in self.model._meta.concrete_fields:
            related = getattr(f, "related_model", None)
            if f.is_relation and related is not None and not isinstance(related, str):
                if related._meta.label in self.ref_models:
                    out[f.name] = related._meta.label
        return out

    @property
    def label(self) -> str:
        return f"{self.model._meta.label}"

    def unknown_relations(self) -> list[str]:
        """Relations (and columns) the codec neither copies, maps nor drops — empty when complete."""
        known = self.refs | self.drop
        return [f.name for f in self.model._meta.concrete_fields if f.is_relation and f.name not in known] + [
            name for name in known - {"id"} if name not in {f.name for f in self.model._meta.concrete_fields}
        ]

    @property
    def fields(self) -> list[models.Field[Any, Any]]:
        if self._fields is None:
            unknown = self.unknown_relations()
            if unknown:
                raise BundleError(
                    f"{self.label}: the bundle format does not know {unknown}; map it in runs/bundle/sections.py "
                    "(a natural key in refs, or drop with a reason) before exporting or importing"
                )
            self._fields = [
                f
                for f in self.model._meta.concrete_fields
                if not f.is_relation and f.name not in self.drop and f.name not in self.refs
            ]
        return self._fields

    @property
    def names(self) -> list[str]:
        """Column names for ``QuerySet.values``."""
        return [f.attname for f in self.fields]

    def dump(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """A ``values()`` row as a record (plain columns only; the section adds the refs)."""
        return {f.name: plain(row[f.attname]) for f in self.fields}

    def dump_instance(self, obj: models.Model) -> dict[str, Any]:
        return {f.name: plain(getattr(obj, f.attname)) for f in self.fields}

    def load(self, record: Mapping[str, Any]) -> dict[str, Any]:
        """Model keyword arguments from a record's plain columns (refs are the section's)."""
        out: dict[str, Any] = {}
        for f in self.fields:
            if f.name not in record:
                if f.has_default() or f.null or f.blank:
                    continue  # an older minor format without this optional column: the default
                raise BundleError(f"{self.label} record lacks the required field {f.name!r}")
            value = record[f.name]
            if value is not None and not isinstance(f, models.JSONField):
                try:
                    value = f.to_python(value)
                except Exception as exc:
                    raise BundleError(f"{self.label}.{f.name}: {value!r} is not valid ({exc})") from None
            out[f.attname] = value
        return out

    def auto_timestamps(self) -> list[str]:
        """Columns Django overwrites on create (``auto_now[_add]``): the importer restores them after."""
        return [
            f.attname
            for f in self.fields
            if isinstance(f, models.DateTimeField | models.DateField) and (f.auto_now or f.auto_now_add)
        ]
