"""``kbseek model``: fetch and list the embedding models the ``fastembed`` provider runs.

Downloading is a command of its own (decision 0039): ``index`` and ``serve`` never start a
download unless ``[embed] allow_download = true``, so the one place a model is fetched is here,
with a progress bar on stderr, and every file checked against the Hub's checksums before it is
used. Results go to stdout, progress and warnings to stderr.
"""

from __future__ import annotations

import json

import click

from kbseek.cli.options import configure_logging
from kbseek.embed import catalogue, human_size, models_cache, pull_model, pulled_copy


@click.group("model")
def model() -> None:
    """Download and list the embedding models of provider "fastembed".

    \b
    Example:
        kbseek model list
        kbseek model pull intfloat/multilingual-e5-large
    """


@model.command("pull")
@click.argument("name")
@click.option("-v", "--verbose", count=True, help="More detail on stderr (-vv for debug).")
def pull(name: str, verbose: int) -> None:
    """Download the model NAME into kbseek's cache and verify it.

    NAME is a model fastembed knows (`kbseek model list`), in full or by
    its name after the slash. Files already downloaded are kept; every
    file is checked against the sha256 (or git blob id) the Hugging Face
    Hub publishes, and a damaged one is deleted so that running the
    command again fetches it afresh. HF_ENDPOINT and HF_TOKEN are read as
    by every Hugging Face tool; HF_HUB_OFFLINE=1 refuses.

    \b
    Example:
        kbseek model pull paraphrase-multilingual-mpnet-base-v2
    """
    configure_logging(verbose)
    found, pulled = pull_model(name)
    click.echo(
        f"pulled {found.name} ({pulled.repo_id} at {pulled.commit[:12]}): {len(pulled.files)} files, "
        f"{human_size(pulled.size())}, verified, in {pulled.folder}"
    )
    click.echo(f'use it with [embed] provider = "fastembed" and model = "{found.name}"')


@model.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print the models as a JSON list.")
def list_models(as_json: bool) -> None:
    """List the models fastembed knows, with their vector size, download
    size and whether they are pulled.

    A model not listed can still be used from a folder holding model.onnx
    and tokenizer.json: give the folder's path as [embed] model.
    """
    entries = [(entry, pulled_copy(entry)) for entry in catalogue()]
    if as_json:
        rows = [
            {
                "name": entry.name,
                "dim": entry.dim,
                "size_bytes": entry.size_bytes,
                "pulled": copy is not None,
                "folder": str(copy.folder) if copy is not None else None,
            }
            for entry, copy in entries
        ]
        click.echo(json.dumps(rows, indent=2))
        return
    width = max(len(entry.name) for entry, _ in entries)
    for entry, copy in entries:
        mark = "pulled" if copy is not None else ""
        line = f"{entry.name:<{width}}  {entry.dim:>5}-d  {human_size(entry.size_bytes):>8}  {mark}"
        click.echo(line.rstrip())
    click.echo(f"\ncache: {models_cache()}")
