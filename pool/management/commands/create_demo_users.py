"""Demo accounts: a superuser ``admin`` and one account per role, each with a fresh printed password.

For the demo (``DEBUG=1``) and tests only: on an install with ``DEBUG=0`` it would reset an existing
``admin`` to a superuser with a password printed to the terminal (and its logs) and make every role
account staff, so it refuses there unless told ``--not-a-demo``.
"""

from __future__ import annotations

import secrets
from typing import Any

from django.conf import settings
from django.contrib.auth.models import Group, User
from django.core.management.base import BaseCommand, CommandError, CommandParser

from overeager.roles import ROLES, sync_groups


class Command(BaseCommand):
    help = "Create a demo superuser 'admin' and one user per role, each with a fresh printed password."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--not-a-demo",
            action="store_true",
            help="run even with DEBUG=0 (resets 'admin' and the role accounts' passwords, printed here)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if not settings.DEBUG and not options["not_a_demo"]:
            raise CommandError(
                "refusing with DEBUG=0: this resets 'admin' to a superuser with a printed password and makes"
                " every role account staff. On a real install create accounts with `manage.py createsuperuser`"
                " and the admin; pass --not-a-demo if you mean to do this here."
            )
        sync_groups()
        accounts = [("admin", None)] + [(role, role) for role in ROLES]
        for username, role in accounts:
            password = secrets.token_urlsafe(12)
            user, _ = User.objects.get_or_create(username=username)
            user.is_staff = True
            user.is_superuser = role is None
            user.set_password(password)
            user.save()
            if role:
                user.groups.set([Group.objects.get(name=role)])
            self.stdout.write(f"  {username:<10} password: {password}")
