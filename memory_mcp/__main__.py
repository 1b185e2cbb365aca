from memory_mcp.stdio import main

main()
