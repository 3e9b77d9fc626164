"""Service errors: one exception per kind of refusal, the same message on web and API.

Each carries the HTTP status the API answers with; the web shows the message next to the
form or as a page message.
"""


class ServiceError(Exception):
    status = 400
    # A stable word a program can test (the API answers it as `code`); empty for most.
    code = ""

    def __init__(self, message, *, field=None):
        super().__init__(message)
        self.message = str(message)
        self.field = field


class InvalidInput(ServiceError):
    status = 422


class Unauthenticated(ServiceError):
    """Credentials that do not match an account (a wrong email or password)."""

    status = 401


class NotAllowed(ServiceError):
    status = 403


class NotFound(ServiceError):
    status = 404


class Conflict(ServiceError):
    status = 409


class Throttled(ServiceError):
    status = 429

    def __init__(self, message, *, retry_after):
        super().__init__(message)
        self.retry_after = retry_after


class Unavailable(ServiceError):
    status = 503
