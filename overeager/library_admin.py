"""Admin fields for the libraries' curators: grounding as rows, text kept verbatim.

The grounding editor: a library entry's references as rows, not a JSON document.

An archetype (SNARE) and a task family (UnderSpecBench) each carry ``grounding``, a list of
``{kind, title, url, note}`` records that the YAML files write out one per item. The admin showed
it as a raw JSON textarea, where a curator adding a reference had to hand-write valid JSON. Here
each record is a row of inputs (the kind a choice of the library's own kinds), with blank rows to
add more; blank rows are dropped. What the rows hold is checked where the files are checked, by
the model's ``clean`` (pool.libschema, suite.schema), so the rules stay in one place.

Verbatim text: Django's form fields strip a text's leading and trailing whitespace, so saving an
archetype unchanged cut the final newline off its scripts and fixtures, changed its digest and
recorded a library version nobody made. Scripts and file contents are kept as typed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from django import forms
from django.contrib import admin
from django.contrib.admin.options import BaseModelAdmin
from django.core.exceptions import ValidationError
from django.db.models import Field, TextField
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

FIELDS = ("kind", "title", "url", "note")
BLANK_ROWS = 2


def _records(value: Any) -> list[dict[str, str]]:
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else []
        except ValueError:
            return []
    return [{f: str(r.get(f) or "") for f in FIELDS} for r in (value or []) if isinstance(r, Mapping)]


class GroundingWidget(forms.Widget):
    def __init__(self, kinds: Sequence[str], attrs: dict[str, Any] | None = None) -> None:
        super().__init__(attrs)
        self.kinds = tuple(kinds)

    def render(self, name: str, value: Any, attrs: dict[str, Any] | None = None, renderer: Any = None) -> SafeString:
        rows = [*_records(value), *(dict.fromkeys(FIELDS, "") for _ in range(BLANK_ROWS))]
        body = format_html_join("", "<tr>{}</tr>", ((self._row(name, i, row),) for i, row in enumerate(rows)))
        return format_html(
            '<table class="grounding-rows" id="id_{}"><thead><tr><th>kind</th><th>title</th><th>URL</th>'
            "<th>note</th></tr></thead><tbody>{}</tbody></table>"
            '<p class="help">One reference per row. Clear a row to remove it; save to get more blank rows.</p>',
            name,
            body,
        )

    def _row(self, name: str, i: int, row: Mapping[str, str]) -> SafeString:
        prefix = f"{name}-{i}"
        # A kind the library no longer lists is still offered, so that saving changes nothing by itself.
        kinds = ("", *self.kinds, *((row["kind"],) if row["kind"] and row["kind"] not in self.kinds else ()))
        options = format_html_join(
            "",
            '<option value="{}"{}>{}</option>',
            ((k, mark_safe(" selected") if k == row["kind"] else "", k or "—") for k in kinds),
        )
        return format_html(
            '<td><select name="{}-kind">{}</select></td>'
            '<td><input type="text" name="{}-title" value="{}" size="48"></td>'
            '<td><input type="text" name="{}-url" value="{}" size="40"></td>'
            '<td><textarea name="{}-note" rows="2" cols="40">{}</textarea></td>',
            prefix,
            options,
            prefix,
            row["title"],
            prefix,
            row["url"],
            prefix,
            row["note"],
        )

    def value_from_datadict(self, data: Any, files: Any, name: str) -> list[dict[str, str]]:
        records = []
        i = 0
        while any(f"{name}-{i}-{f}" in data for f in FIELDS):
            row = {f: str(data.get(f"{name}-{i}-{f}", "")).strip() for f in FIELDS}
            if any(row.values()):
                # An empty value is left out, as the files leave out an optional key (pool grounding's
                # url): a save that changes nothing keeps the entry's digest.
                records.append({f: v for f, v in row.items() if v})
            i += 1
        return records

    def value_omitted_from_data(self, data: Any, files: Any, name: str) -> bool:
        return False


class GroundingField(forms.Field):
    """A list of grounding records from :class:`GroundingWidget`; at least one."""

    def __init__(self, kinds: Sequence[str], **kwargs: Any) -> None:
        kwargs.setdefault("widget", GroundingWidget(kinds))
        kwargs.pop("encoder", None)
        kwargs.pop("decoder", None)
        kwargs.pop("max_length", None)
        super().__init__(**kwargs)

    def to_python(self, value: Any) -> list[dict[str, str]]:
        if value in (None, ""):
            return []
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                raise ValidationError("grounding must be a list of references", code="invalid") from None
        if not isinstance(value, list) or not all(isinstance(r, Mapping) for r in value):
            raise ValidationError("grounding must be a list of references", code="invalid")
        return [dict(r) for r in value]

    def has_changed(self, initial: Any, data: Any) -> bool:
        return _records(initial) != _records(data)


class GroundingAdmin(admin.ModelAdmin):
    """Edits a model's ``grounding`` JSON with :class:`GroundingField` (mixed in before the admin's base)."""

    grounding_kinds: tuple[str, ...] = ()

    def formfield_for_dbfield(self, db_field: Field[Any, Any], request: HttpRequest, **kwargs: Any) -> Any:
        if db_field.name == "grounding":
            return GroundingField(self.grounding_kinds, label="Grounding", help_text=db_field.help_text)
        return super().formfield_for_dbfield(db_field, request, **kwargs)


class VerbatimTextAdmin(BaseModelAdmin):
    """Text fields keep their whitespace (mixed in before the admin's or inline's base)."""

    def formfield_for_dbfield(self, db_field: Field[Any, Any], request: HttpRequest, **kwargs: Any) -> Any:
        if isinstance(db_field, TextField):
            kwargs.setdefault("strip", False)
        return super().formfield_for_dbfield(db_field, request, **kwargs)
