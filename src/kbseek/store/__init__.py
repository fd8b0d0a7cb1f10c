"""The index: everything kbseek keeps about the files, behind one protocol.

- ``base``: the :class:`~kbseek.store.base.Store` protocol that search and ingest talk to;
  ``records``: the records it reads and writes. Code outside this package names the protocol,
  never a backend.
- ``meta``, ``conventions``, ``facts``, ``links``: what both backends keep alike, written once (the
  meta table's keys and reading, the packed text and BM25 weights, the date and field rows, links).
- ``sqlite``: :class:`~kbseek.store.sqlite.SqliteStore`, the default backend (connections, reads);
  ``sqlite_writer``: its transactions' writes; ``schema``: its tables, their version and upgrades,
  and a read-only look at an index file.
- ``postgres``: :class:`~kbseek.store.postgres.PostgresStore`, one index in PostgreSQL with pgvector
  for a team (``kbseek[postgres]``); ``postgres_writer`` and ``postgres_schema`` as above.
- ``opening``: which of the two a knowledge base uses (``[store].url``), and its name there.
- ``lock``: the writer lock that keeps two processes from indexing the same folder at once.

All SQL lives in this package.
"""
