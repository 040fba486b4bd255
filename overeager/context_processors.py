from django.http import HttpRequest

from overeager.roles import roles_of


def roles(request: HttpRequest) -> dict[str, object]:
    """Expose the user's roles so templates show only the actions a role may take."""
    return {"user_roles": roles_of(request.user)}
