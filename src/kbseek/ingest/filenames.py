"""The names kbseek gives to the files and folders it reads or writes inside a knowledge base.

They live in a module of their own, below everything else, because both the
configuration (which reads ``kbseek.toml``) and indexing (which skips the index
folder and reads the ignore file) need them, and indexing must not depend on
the configuration it is given.
"""

from __future__ import annotations

CONFIG_FILENAME = "kbseek.toml"
"""The config file looked for in the current directory."""

INDEX_DIRNAME = ".kbseek"
"""The folder inside a knowledge base that holds its index; never indexed itself."""

IGNORE_FILENAME = ".kbseekignore"
"""Gitignore-style rules, at the knowledge-base root, for what indexing skips (never what is readable, D1)."""
