"""The three roles and what each may do.

Roles are Django groups (created by ``manage.py create_roles``) so that an operator can see and
change them in the admin; the permission sets below are the single source of truth for what a
group holds. Every role is staff: viewers and validators may browse the libraries read-only in
the admin, only curators may change them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import wraps
from typing import Any, TypeVar

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, Group, Permission
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse

CURATOR = "curator"
VALIDATOR = "validator"
VIEWER = "viewer"
ROLES = (CURATOR, VALIDATOR, VIEWER)

# Models whose content curators edit; the other roles only view them.
LIBRARY_MODELS = (
    "pool.archetype",
    "pool.archetypefixture",
    "pool.trappredicate",
    "pool.consentmode",
    "pool.phrasing",
    "pool.skeleton",
    "pool.atom",
    "pool.fixtureseed",
    "pool.seedcommit",
    "pool.seedfile",
    "pool.mutationtext",
    # Systems under test are configuration curators maintain like the libraries.
    "runs.agentframework",
    "runs.modelendpoint",
    "runs.systemundertest",
    # UnderSpecBench task families (their prompts are regenerated, never edited).
    "suite.taskfamily",
)
READ_ONLY_MODELS = (
    "pool.libraryversion",
    "pool.poolversion",
    "pool.candidate",
    "runs.matrix",
    "runs.campaign",
    "runs.run",
    "runs.runattempt",
    "suite.familyprompt",
    "suite.suiteversion",
    # Scenario packs change by re-importing their files (manage.py import_scenarios), never by hand.
    "packs.scenariopack",
    "packs.packscenario",
)
# Non-action labels (labels/). Validators label through their own pages and see none of these
# in the admin: the judge's label, other validators' labels and rulings would unblind them.
# Curators and viewers view them; curators also build queues and adjudicate (a ruling is a new
# Adjudication row, added from the review page, which needs change on the review proxy).
LABEL_MODELS = (
    "labels.judgelabel",
    "labels.humanlabel",
    "labels.adjudication",
    "labels.validationqueue",
    "labels.reviewrun",
    # Verdict validation: queues, the validators' verdict labels and the curators' rulings.
    "labels.verdictqueue",
    "labels.verdictlabel",
    "labels.verdictadjudication",
)
LABEL_CURATOR_PERMISSIONS = (
    "labels.add_validationqueue",
    "labels.change_validationqueue",
    "labels.delete_validationqueue",
    "labels.add_adjudication",
    "labels.change_reviewrun",
)


def permission_codes(role: str) -> list[str]:
    """Return ``app_label.codename`` strings for the role."""
    viewable = [*LIBRARY_MODELS, *READ_ONLY_MODELS]
    codes = [f"{app}.view_{model}" for app, model in (m.split(".") for m in viewable)]
    if role in (CURATOR, VIEWER):
        codes += [f"{app}.view_{model}" for app, model in (m.split(".") for m in LABEL_MODELS)]
    if role == CURATOR:
        for label in LIBRARY_MODELS:
            app, model = label.split(".")
            codes += [f"{app}.add_{model}", f"{app}.change_{model}", f"{app}.delete_{model}"]
        codes += LABEL_CURATOR_PERMISSIONS
    elif role not in (VALIDATOR, VIEWER):
        raise ValueError(f"unknown role {role!r}")
    return codes


def sync_groups() -> dict[str, int]:
    """Create or update the role groups; return the permission count per role."""
    counts: dict[str, int] = {}
    for role in ROLES:
        group, _ = Group.objects.get_or_create(name=role)
        wanted = []
        for code in permission_codes(role):
            app, codename = code.split(".")
            wanted.append(Permission.objects.get(content_type__app_label=app, codename=codename))
        group.permissions.set(wanted)
        counts[role] = len(wanted)
    return counts


def roles_of(user: AbstractBaseUser | AnonymousUser) -> set[str]:
    if not user.is_authenticated:
        return set()
    if getattr(user, "is_superuser", False):
        return set(ROLES)
    cached: set[str] | None = getattr(user, "_overeager_roles", None)
    if cached is None:
        groups = getattr(user, "groups")  # noqa: B009 - AbstractBaseUser has no groups; ours do
        cached = set(groups.filter(name__in=ROLES).values_list("name", flat=True))
        setattr(user, "_overeager_roles", cached)  # noqa: B010 - per-request memo on the user object
    return cached


F = TypeVar("F", bound=Callable[..., HttpResponse])


def role_required(*allowed: str) -> Callable[[F], F]:
    """Anonymous users are sent to the login page; logged-in users without a role get 403."""
    from django.contrib.auth.views import redirect_to_login

    wanted: Iterable[str] = allowed or ROLES

    def decorator(view: F) -> F:
        @wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            if not roles_of(request.user) & set(wanted):
                raise PermissionDenied("your account has no role that may open this page")
            return view(request, *args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorator


def superuser_required(view: F) -> F:
    """Anonymous users go to the login page; any other non-superuser gets 403."""
    from django.contrib.auth.views import redirect_to_login

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not getattr(request.user, "is_superuser", False):
            raise PermissionDenied("only administrators may open this page")
        return view(request, *args, **kwargs)

    return wrapper  # type: ignore[return-value]
