"""Model API errors as the litellm-based CLIs (mini-swe-agent, aider) report them.

Both print or record the exception that ended a model call as ``litellm.<Class>: <Class>:
OpenAIException - <message>``; the text carries no status code, but each litellm exception class
stands for one (``litellm/exceptions.py`` sets ``status_code`` per class).  A refused connection
is wrapped as ``InternalServerError`` (500), a read timeout as ``Timeout`` (408).
"""

from __future__ import annotations

import re

from harness.agents.events import Error, clip

LITELLM_STATUS: dict[str, int] = {
    "BadRequestError": 400,
    "ContextWindowExceededError": 400,
    "ContentPolicyViolationError": 400,
    "UnsupportedParamsError": 400,
    "AuthenticationError": 401,
    "PermissionDeniedError": 403,
    "NotFoundError": 404,
    "Timeout": 408,
    "UnprocessableEntityError": 422,
    "RateLimitError": 429,
    "APIError": 500,
    "APIConnectionError": 500,
    "InternalServerError": 500,
    "BadGatewayError": 502,
    "ServiceUnavailableError": 503,
}
_LITELLM_ERROR = re.compile(r"\blitellm\.(\w+):")


def status_of(exception_class: str) -> int | None:
    return LITELLM_STATUS.get(exception_class)


def litellm_error(text: str) -> Error | None:
    """The model API error a line of CLI output names, or None when it names none."""
    m = _LITELLM_ERROR.search(text)
    if m is None:
        return None
    code = status_of(m.group(1))
    # From the class name on: a CLI may print the error after a prompt on the same line.
    message = text[m.start() :].strip()
    return Error(message=clip(message), source="model_api" if code is not None else "agent", status=code)
