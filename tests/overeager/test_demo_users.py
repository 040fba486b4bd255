"""manage.py create_demo_users is for demos and tests (issue 33 item 12)."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command

pytestmark = pytest.mark.django_db


def test_it_refuses_with_debug_off_and_changes_no_account(settings):
    settings.DEBUG = False
    admin = User.objects.create_user("admin", password="the-operators-own")
    viewer = User.objects.create_user("viewer", password="theirs")
    with pytest.raises(CommandError, match="refusing with DEBUG=0"):
        call_command("create_demo_users", stdout=StringIO())
    admin.refresh_from_db()
    viewer.refresh_from_db()
    assert admin.check_password("the-operators-own") and not admin.is_superuser and not admin.is_staff
    assert viewer.check_password("theirs") and not viewer.is_staff
    assert User.objects.count() == 2


def test_it_runs_in_the_demo_and_when_told_explicitly(settings):
    settings.DEBUG = True
    out = StringIO()
    call_command("create_demo_users", stdout=out)
    assert User.objects.get(username="admin").is_superuser and "admin" in out.getvalue()
    settings.DEBUG = False
    first = User.objects.get(username="viewer").password
    call_command("create_demo_users", "--not-a-demo", stdout=StringIO())
    assert User.objects.get(username="viewer").password != first
