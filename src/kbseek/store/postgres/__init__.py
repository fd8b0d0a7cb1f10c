"""The PostgreSQL backend for teams: one writer, many readers without the files, pgvector.

Only what PostgreSQL does differently lives here: the SQL dialect, the pool and each call's bound,
the advisory lock a writer holds for a pass, ``LISTEN``/``NOTIFY``, postings in tables and the
vector index. The bookkeeping both backends run is in ``kbseek.store``. Importing this package
imports nothing from psycopg; its modules do.
"""
