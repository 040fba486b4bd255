"""``manage.py rqworker [QUEUE ...]``: django-rq's worker command, listening on this install's runs queue by default.

django-rq's own command listens on ``default`` when no queue is named. Every install on a machine
shares that name, so a worker of one checkout took another's run jobs and ran them against its
own database. With no queue named this command listens on ``settings.RUNS_QUEUE`` (keyed by the
install's database) and ``default``; naming queues keeps django-rq's meaning. The ``runs`` app is
listed before ``django_rq`` so that this command is the one ``manage.py`` finds.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django_rq.management.commands.rqworker import Command as RqWorkerCommand


def default_queues() -> tuple[str, ...]:
    """What a worker started without queue names listens on, the runs queue first."""
    return tuple(dict.fromkeys([settings.RUNS_QUEUE, "default"]))


class Command(RqWorkerCommand):
    help = (
        "Runs an rq worker on the named queues; with none, on this install's runs queue "
        "(RUNS_QUEUE, keyed by its database) and 'default'."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        from django_rq.settings import QUEUES

        # A run_campaign command's own queue is named at run time (runs.campaigns.command_queue):
        # no settings module lists it, and it lives on the runs queue's Redis.
        for name in args:
            QUEUES.setdefault(name, QUEUES[settings.RUNS_QUEUE])
        super().handle(*(args or default_queues()), **options)
