"""Python client for the memory service's agent API (`/api/v1/`), sync and async.

    from memory_client import MemoryClient
    with MemoryClient("http://localhost:8000", api_key) as memory:
        memory.write_memory("user_123", "I prefer short answers.")
        hits = memory.search("user_123", "How should answers be written?")

`memory_client.langgraph.MemoryStore` is a LangGraph BaseStore on the same API.
"""
from memory_client.client import AsyncMemoryClient, MemoryClient
from memory_client.errors import (
    AuthenticationError, BadRequestError, ConflictError, MemoryApiError, MemoryConnectionError, NotFoundError,
    PermissionDeniedError, PolicyRejectedError, RateLimitedError, ServerError, UnavailableError,
)

__all__ = [
    "MemoryClient", "AsyncMemoryClient", "MemoryApiError", "BadRequestError", "AuthenticationError",
    "PermissionDeniedError", "NotFoundError", "ConflictError", "PolicyRejectedError", "RateLimitedError",
    "ServerError", "UnavailableError", "MemoryConnectionError",
]
__version__ = "0.1.0"
