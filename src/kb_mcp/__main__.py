from kb_mcp.cli import main

main()
