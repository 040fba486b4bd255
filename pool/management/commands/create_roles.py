from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from overeager.roles import sync_groups


class Command(BaseCommand):
    help = "Create or update the curator, validator and viewer groups and their permissions."

    def handle(self, *args: Any, **options: Any) -> None:
        for role, count in sync_groups().items():
            self.stdout.write(f"{role}: {count} permissions")
