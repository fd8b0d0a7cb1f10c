"""``kbseek doctor``: check what usually goes wrong, and say how to fix each thing.

Each check is a small function returning a :class:`CheckResult` (name, status,
detail, fix), so the CLI only prints and the checks can be tested one by one. They live by what
they look at: ``configuration`` (the config and the embedding model), ``reranker`` (the ``[rerank]``
stage scores, within its budget, from verified files), ``system`` (Python, the file
watcher's limits, free disk), ``sqlite_index`` (the index file, its folder's modes, the writer
lock), ``postgres_store`` (the database, pgvector, the knowledge base's schema and its advisory lock,
in place of the file checks when the index is in PostgreSQL); ``runner`` puts them in order and
``report`` prints them.

Doctor is strictly read-only, because it is what a user runs when something is
already wrong, and it must not make things worse or hide the evidence: it never
creates the index folder, looks at the index through ``store.sqlite.schema.inspect_index``
(``mode=ro``, and, when no write-ahead log is present, ``immutable=1`` so SQLite does
not leave ``-wal`` and ``-shm`` files behind), and finds the holder of the writer
lock without taking it where the system allows that (``/proc/locks`` on Linux).
For the same reason it does not build a :class:`~kbseek.kb.KnowledgeBase`: that
prepares the index folder on construction, and a broken config must become a
failed check naming the error, not a traceback.
"""

from __future__ import annotations

from kbseek.cli.doctor.report import report
from kbseek.cli.doctor.result import CheckResult, DoctorOptions, Status
from kbseek.cli.doctor.runner import index_command, run_doctor

__all__ = ["CheckResult", "DoctorOptions", "Status", "index_command", "report", "run_doctor"]
