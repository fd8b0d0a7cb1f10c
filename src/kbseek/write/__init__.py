"""Writing notes: the one guard for a path a write may touch, the edits, and the replace that never
loses a save made meanwhile.

Domain code, below the facade: ``KnowledgeBase`` decides when a write is allowed and indexes what it
wrote; the surfaces (MCP tools, CLI) only carry arguments and answers. Nothing here is reached when
writing is off (``[write]``).
"""
