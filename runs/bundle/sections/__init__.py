"""The bundle's sections, one per model family; ``base.Section.order`` is their dependency order.

Importing this package registers the built-in sections; an app adds its own by calling
``runs.bundle.sections.base.register`` from a module imported here.
"""

from runs.bundle.sections import campaigns, labels, library, pool, runs, suite, systems  # noqa: F401 - they register
