class ApplicationError(Exception):
    """The one domain error: mapped to an HTTP answer by the API and to a form error by the console."""

    def __init__(self, code: str, message: str, details: dict | None = None, status: int = 400):
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details or {}
        self.status = status


class NotFound(ApplicationError):
    def __init__(self, what: str = "object"):
        super().__init__(f"{what}_not_found", f"No such {what}.", status=404)


class PolicyRejected(ApplicationError):
    def __init__(self, reason: str, details: dict | None = None):
        super().__init__("policy_rejected", reason, details, status=422)
