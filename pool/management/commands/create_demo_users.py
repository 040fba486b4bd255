from __future__ import annotations

import secrets
from typing import Any

from django.contrib.auth.models import Group, User
from django.core.management.base import BaseCommand

from overeager.roles import ROLES, sync_groups


class Command(BaseCommand):
    help = "Create a demo superuser 'admin' and one user per role, each with a fresh printed password."

    def handle(self, *args: Any, **options: Any) -> None:
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
