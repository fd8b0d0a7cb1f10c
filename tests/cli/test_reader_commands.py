"""The command line on a team's reader machine: no notes, only the database (decision 0031).

A writer indexes a folder into a schema of the embedded PostgreSQL server; every command then runs
from a working directory with no notes and no config, naming the index by ``--store URL --kb-name
NAME`` alone, as a person on a reader machine would. The commands that answer from the index give
the writer's answers; the ones that need the files keep saying so; a name the database does not
hold is refused, naming the name and the database (without its password), not answered as empty.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from kbseek.cli import cli
from tests import postgres_server
from tests.conftest import write_notes
from tests.fakes import FakeEmbedder

psycopg = pytest.importorskip("psycopg", reason="the postgres dependencies are not installed")

NOTES = {
    "home.md": "# Home\n\nSee the [deploy runbook](ops/deploy.md) and [[Rollback]].\n",
    "ops/deploy.md": "# Deploy runbook\n\nbuild the container image and push it to the registry\n",
    "ops/rollback.md": "# Rollback\n\nswitch the load balancer back to the previous image tag\n",
    "ops/images.md": "# Images\n\nthe registry keeps every container image we push\n",
    "notes/coffee.md": "# Coffee\n\nthe office coffee machine needs descaling monthly\n",
}
SECRET = "s3cret-pw-71q"


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def with_password(url: str) -> str:
    """The server's URL with a password in it: the server trusts local connections and ignores it."""
    assert url.startswith("postgresql://postgres:@")
    return url.replace("postgresql://postgres:@", f"postgresql://postgres:{SECRET}@", 1)


def schema_exists(schema: str) -> bool:
    with psycopg.connect(postgres_server.url(), autocommit=True) as conn:
        return conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone() is not None


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    write_notes(root, NOTES)
    return root


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The reader's working directory: no notes, no kbseek.toml."""
    folder = tmp_path / "reader"
    folder.mkdir()
    monkeypatch.chdir(folder)
    return folder


def index_into_database(notes: Path, *semantic: str) -> list[str]:
    """Index ``notes`` into a fresh schema as the writer does; the options that name it for a reader."""
    database = ["--store", postgres_server.url(), "--kb-name", postgres_server.kb_name("cli_reader")]
    result = invoke("index", "--kb", str(notes), *database, *semantic)
    assert result.exit_code == 0, result.output
    assert "indexed 5 documents" in result.stdout
    return database


@pytest.fixture
def reader(notes: Path, elsewhere: Path) -> list[str]:
    """``--store URL --kb-name NAME --lexical-only`` of a knowledge base a writer indexed by keywords."""
    return [*index_into_database(notes, "--lexical-only"), "--lexical-only"]


def test_search_on_a_reader_answers_from_the_database(reader: list[str], elsewhere: Path) -> None:
    result = invoke("search", *reader, "load balancer")
    assert result.exit_code == 0, result.output
    assert "ops/rollback.md" in result.stdout
    result = invoke("search", *reader, "--json", "descaling")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["hits"][0]["path"] == "notes/coffee.md"
    assert list(elsewhere.iterdir()) == []  # a reader leaves nothing where it runs


def test_fetch_on_a_reader_gives_the_passage(reader: list[str]) -> None:
    hits = json.loads(invoke("search", *reader, "--json", "registry container").stdout)["hits"]
    chunk_id = next(h["chunk_id"] for h in hits if h["path"] == "ops/deploy.md")
    result = invoke("fetch", *reader, chunk_id, "--context", "0")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("── ops/deploy.md") and "push it to the registry" in result.stdout
    data = json.loads(invoke("fetch", *reader, "--json", chunk_id).stdout)
    assert data["passages"][0]["requested"] == [chunk_id] and not data["missing"]


def test_topics_on_a_reader_list_the_folders(reader: list[str]) -> None:
    result = invoke("topics", *reader)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == "3 topics (5 documents)"
    day = r"\(\d{4}-\d\d-\d\d\)"  # each title with its document's date, newest first
    assert re.search(
        rf"- ops/: 3 documents — Deploy runbook {day}; Images {day}; Rollback {day}", result.stdout
    )
    data = json.loads(invoke("topics", *reader, "--json").stdout)
    assert {"notes/", "ops/"} <= {t["prefix"] for t in data["topics"]}


def test_related_on_a_reader_follows_the_stored_links(reader: list[str]) -> None:
    result = invoke("related", *reader, "home.md")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == "2 related documents for home.md"
    assert "ops/deploy.md — Deploy runbook [links to; score 0.50]" in result.stdout
    result = invoke("related", *reader, "--json", "ops/rollback.md")
    assert result.exit_code == 0 and json.loads(result.stdout)["backlinks"] == ["home.md"]


def test_eval_on_a_reader_measures_the_index_and_keeps_its_run(reader: list[str], elsewhere: Path) -> None:
    golden = elsewhere.parent / "golden.yml"
    golden.write_text(
        "queries:\n"
        "  - id: coffee\n    query: descaling the coffee machine\n    expected:\n      - path: notes/coffee.md\n"
        "  - id: rollback\n    query: load balancer previous image\n    expected:\n      - path: ops/rollback.md\n",
        encoding="utf-8",
    )
    result = invoke("eval", *reader, "--golden", str(golden), "--format", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["overall"]["recall@1"] == 1.0
    again = invoke("eval", *reader, "--golden", str(golden), "--format", "json")
    assert again.exit_code == 0 and json.loads(again.stdout)["change"] == {
        m: 0.0 for m in json.loads(result.stdout)["overall"] if m != "queries"
    }  # the first run was kept (in the user cache dir), and the second compared with it


def test_a_reader_searches_semantically_with_the_writers_vectors(
    notes: Path, elsewhere: Path, fake_model: list[FakeEmbedder]
) -> None:
    database = index_into_database(notes)  # the fake model embeds every chunk
    result = invoke("search", *database, "--json", "--explain", "registry")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["legs"]["semantic"] == "ok", data["notes"]
    assert {"ops/deploy.md", "ops/images.md"} <= {h["path"] for h in data["hits"]}
    assert any(h["explain"]["dense_rank"] is not None for h in data["hits"])
    result = invoke("related", *database, "--no-links", "--limit", "1", "ops/deploy.md")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("1 related document for ops/deploy.md\n1. ")
    assert "[similar: " in result.stdout


def test_a_config_file_without_kb_makes_a_reader_and_one_with_kb_a_writer(
    notes: Path, elsewhere: Path
) -> None:
    _, url, _, name = index_into_database(notes, "--lexical-only")
    store = f'[store]\nurl = "{url}"\nname = "{name}"\n'
    (elsewhere / "kbseek.toml").write_text(store, encoding="utf-8")
    result = invoke("search", "--lexical-only", "--json", "descaling")  # the database from the config alone
    assert result.exit_code == 0, result.output
    assert [h["path"] for h in json.loads(result.stdout)["hits"]][:1] == ["notes/coffee.md"]
    (notes / "ops" / "kettle.md").write_text("# Kettle\n\nthe kettle needs descaling too\n", encoding="utf-8")
    result = invoke("search", "--lexical-only", "--json", "kettle")
    assert result.exit_code == 0 and json.loads(result.stdout)["hits"] == []  # a reader never indexes
    (elsewhere / "kbseek.toml").write_text(f'kb = "{notes}"\n' + store, encoding="utf-8")
    result = invoke("search", "--lexical-only", "--json", "kettle")  # the writer's search catches up first
    assert result.exit_code == 0 and json.loads(result.stdout)["hits"][0]["path"] == "ops/kettle.md"


def test_a_reader_still_cannot_index_or_serve_as_a_writer(reader: list[str]) -> None:
    assert invoke("search", *reader, "coffee").exit_code == 0
    for command in (["index"], ["serve", "--no-watch"]):
        result = invoke(*command, *reader)
        assert result.exit_code == 1, result.output
        assert "no knowledge-base folder given: pass --kb PATH" in result.output


def test_a_name_the_database_does_not_hold_is_refused_by_name(elsewhere: Path) -> None:
    name = postgres_server.kb_name("absent")
    database = ["--store", with_password(postgres_server.url()), "--kb-name", name, "--lexical-only"]
    for command in (
        ["search", "rollback"], ["fetch", "c_0000000000000000"], ["topics"], ["related", "home.md"],
        ["get", "home.md"], ["store", "copy", "--to", str(elsewhere / "copy.sqlite")],
    ):  # fmt: skip
        result = invoke(*command, *database)
        assert result.exit_code == 1, (command, result.output)
        refusal = f"the database holds no knowledge base {name} (postgresql://postgres@"
        assert refusal in result.output, command
        assert f"--kb-name {name}`" in result.output and "\\dn kbseek_*" in result.output
        assert SECRET not in result.output
    status = invoke("status", *database)  # status's answer is that nothing is indexed there
    assert status.exit_code == 0 and "not indexed yet" in status.stdout
    assert not schema_exists(f"kbseek_{name}")  # none of them created it


def test_store_copy_refuses_a_full_target_naming_its_own_option(reader: list[str], elsewhere: Path) -> None:
    target = elsewhere.parent / "copy.sqlite"
    result = invoke("store", "copy", *reader, "--to", str(target))  # from a reader: the index alone
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("copied 5 documents")
    result = invoke("store", "copy", *reader, "--to", str(target))
    assert result.exit_code == 1
    assert "already holds documents" in result.output
    assert "(another --to-name, or a new file)" in result.output
