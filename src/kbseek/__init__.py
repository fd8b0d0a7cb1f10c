"""kbseek: semantic search over a Markdown knowledge base, served to AI agents over MCP."""

from __future__ import annotations

__version__ = "0.1.0"
