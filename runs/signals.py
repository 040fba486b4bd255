"""Signals other apps hook into, so ``runs`` never imports the apps that build on it."""

from __future__ import annotations

from django.dispatch import Signal

#: Sent inside the transaction that stores a scored run (keyword arguments ``run_id``, ``acted``).
#: Receivers that enqueue work must do it on commit.
run_scored = Signal()
