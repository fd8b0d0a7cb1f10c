"""The SQLite backend: one file beside the knowledge base, FTS5 for the keyword leg.

Only what SQLite does differently lives here: the SQL dialect, the connection and its busy
handling, the schema file and FTS5. The bookkeeping both backends run is in ``kbseek.store``.
"""
