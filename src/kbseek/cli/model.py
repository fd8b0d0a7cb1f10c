"""``kbseek model``: fetch and list the models fastembed runs: the embedding models of
``[embed] provider = "fastembed"`` and the cross-encoders of ``[rerank] provider = "local"``.

Downloading is a command of its own (decision 0039): ``index``, ``serve`` and a search never start
a download unless ``allow_download = true`` in ``[embed]`` or ``[rerank]``, and both kinds of model
arrive one way, into one cache: the one place a model is fetched is here,
with a progress bar on stderr, and every file checked against the Hub's checksums before it is
used. Results go to stdout, progress and warnings to stderr.
"""

from __future__ import annotations

import json

import click

from kbseek.cli.options import configure_logging
from kbseek.embed import (
    CatalogueModel,
    PulledModel,
    catalogue,
    human_size,
    models_cache,
    pull_model,
    pulled_copy,
    reranker_catalogue,
)


@click.group("model")
def model() -> None:
    """Download and list the embedding models of [embed] provider
    "fastembed" and the cross-encoders of [rerank] provider "local".

    \b
    Example:
        kbseek model list
        kbseek model pull intfloat/multilingual-e5-large
        kbseek model pull Xenova/ms-marco-MiniLM-L-6-v2
    """


@model.command("pull")
@click.argument("name")
@click.option("-v", "--verbose", count=True, help="More detail on stderr (-vv for debug).")
def pull(name: str, verbose: int) -> None:
    """Download the model NAME into kbseek's cache and verify it.

    NAME is an embedding model or a cross-encoder (reranker) fastembed
    knows (`kbseek model list`), in full or by its name after the slash. Files already downloaded are kept; every
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
    if found.kind == "reranker":
        click.echo(f'use it with [rerank] provider = "local" and model = "{found.name}"')
    else:
        click.echo(f'use it with [embed] provider = "fastembed" and model = "{found.name}"')


@model.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print the models as a JSON list.")
def list_models(as_json: bool) -> None:
    """List the models fastembed knows, with their kind (embedding, for
    [embed], or reranker, for [rerank]), vector size, download size and
    whether they are pulled.

    A model not listed can still be used from a folder holding model.onnx
    and tokenizer.json: give the folder's path as [embed] or [rerank] model.
    """
    entries: list[tuple[CatalogueModel, PulledModel | None]] = [
        (entry, pulled_copy(entry)) for entry in (*catalogue(), *reranker_catalogue())
    ]
    if as_json:
        rows = [
            {
                "name": entry.name,
                "kind": entry.kind,
                "dim": entry.dim or None,
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
        dim = f"{entry.dim:>5}-d" if entry.dim else f"{'':>7}"
        size = human_size(entry.size_bytes)
        line = f"{entry.name:<{width}}  {entry.kind:<9}  {dim}  {size:>8}  {mark}"
        click.echo(line.rstrip())
    click.echo(f"\ncache: {models_cache()}")
