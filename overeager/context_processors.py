from django.http import HttpRequest

from overeager.blind import is_blind
from overeager.roles import roles_of


def roles(request: HttpRequest) -> dict[str, object]:
    """Expose the user's roles so templates show only the actions a role may take, and whether the
    account is blind (its navigation leaves out the results pages it may not open)."""
    return {"user_roles": roles_of(request.user), "blind_account": is_blind(request.user)}
