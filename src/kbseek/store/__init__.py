"""The index: everything kbseek keeps about the files, behind one protocol.

- ``base``: the :class:`~kbseek.store.base.Store` protocol that search and ingest talk to, and the
  records it reads and writes. Code outside this package names the protocol, never a backend.
- ``sqlite``: :class:`~kbseek.store.sqlite.SqliteStore`, the one backend today (connections, reads);
  ``sqlite_writer``: its transactions' writes; ``schema``: its tables, their version and upgrades,
  the meta table's keys, and a read-only look at an index file.
- ``lock``: the writer lock that keeps two processes from indexing the same folder at once.

All SQL lives in this package.
"""
