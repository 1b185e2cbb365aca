"""No console page may come back from a cache: each shows state (a memory's current version, a
job's progress, a key list) that a correction or an erasure may have changed since, and Back
would otherwise show the old state as if it still held. `no-store` on the page itself also keeps
Chromium from putting it in the back/forward cache, so Back asks the server again."""

CONSOLE_PREFIX = "/console/"


class ConsoleNoStoreMiddleware:
    """Cache-Control: no-store on every console response (pages, htmx fragments, redirects,
    error pages) that has not said otherwise. Static files are answered by WhiteNoise before
    this runs and keep their long cache."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        match = getattr(request, "resolver_match", None)
        in_console = request.path_info.startswith(CONSOLE_PREFIX) or (match is not None and match.namespace == "console")
        if in_console and "Cache-Control" not in response:
            response["Cache-Control"] = "no-store"
        return response
