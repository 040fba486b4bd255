"""The bundle's sections, one per model family; ``base.Section.order`` is their dependency order.

Importing this package registers the sections of the runs app; the labels and suite apps register
theirs (labels/bundle.py, suite/bundle.py) from their ``AppConfig.ready``.
"""

from runs.bundle.sections import campaigns, library, pool, runs, systems  # noqa: F401 - they register
