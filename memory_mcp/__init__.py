"""The memory service's MCP server: tools shared by the stdio server (`memory-mcp`, over the v1
REST API) and by `/mcp/` on the running service (api/views/mcp.py)."""
