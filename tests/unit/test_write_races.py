"""Nothing a person saves is lost to an agent's write, and a writer killed anywhere leaves the note whole.

Real processes, no mocks. Two kinds of proof:

**Concurrent saves.** A saver process saves the note in a loop the way editors do (by rename:
write a temporary file, ``os.replace``; or in place: ``open('wb')``, write, close), while this
process does what an agent does: read, hash, ``replace_if_unchanged``. How a lost save is seen:
every content carries a ``saver=<n>`` field. The saver writes ``n`` = its own count; the agent
copies the field from what it read. A correct compare-and-swap only ever replaces the content it
read, so the field at the path is always the saver's latest count. If an agent write ever
displaced a save it did not read, the path now holds an older count, and that count never comes
back (the agent copies what it reads, the saver only ever goes up): the saver sees it at its
next read, and every such sighting names the agent write it saw (``agent=<id>``). A sighting of
an agent write that reported success is a lost save. A control run with a naive replace (re-read,
compare, ``os.replace``) shows that the oracle does see losses when they happen.

**kill -9.** A child stops itself with ``SIGKILL`` at each named point of a write
(:mod:`kbseek.write.steps`), and another is killed at random moments of a write loop; after each,
the note holds the old or the new bytes (whole: each content checks itself), and after the
sweep no temporary file is left.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kbseek.errors import NoteConflict
from kbseek.write.atomic import note_hash, replace_if_unchanged, sweep_leftovers
from kbseek.write.guard import WritePolicy, writable_path

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the swap and the lease are Linux's"
)

RACE_SECONDS = float(os.environ.get("KBSEEK_RACE_SECONDS", "6"))
"""Seconds each saving style is raced against the agent (two styles: about 15 s with the control)."""

SAVER = textwrap.dedent(
    r"""
    import json, os, random, re, sys, time
    path, style, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
    FIELD = re.compile(rb"^saver=(-?\d+) agent=(\S+)")
    rng = random.Random(7)
    count, saves, refused, sightings = 0, 0, 0, []
    print("ready", flush=True)
    sys.stdin.readline()
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        with open(path, "rb") as f:
            data = f.read()
        m = FIELD.match(data)
        seen, agent = (int(m[1]), m[2].decode()) if m else (-1, "unparsed")
        if seen != count:
            sightings.append([count, seen, agent])
        count += 1
        body = b"saver=%d agent=%s\n" % (count, agent.encode()) + b"s" * rng.randrange(0, 48_000)
        try:
            if style == "rename":
                tmp = f"{path}.saving-{count}"
                with open(tmp, "wb") as f:
                    f.write(body)
                os.replace(tmp, path)
            else:
                with open(path, "wb") as f:
                    half = len(body) // 2
                    f.write(body[:half]); f.flush(); f.write(body[half:])
        except PermissionError:
            count -= 1
            refused += 1
            continue
        saves += 1
        if rng.random() < 0.7:  # now and then a pause, so an agent write fits between two saves
            time.sleep(rng.uniform(0, 0.008))
    print(json.dumps({"saves": saves, "last": count, "refused": refused, "sightings": sightings}), flush=True)
    """
)

FIELD = re.compile(rb"^saver=(-?\d+) agent=(\S+)")


@dataclass
class Race:
    trials: int = 0
    successes: set[str] = field(default_factory=set)
    conflicts: set[str] = field(default_factory=set)
    saver: dict[str, object] = field(default_factory=dict)

    @property
    def losses(self) -> list[list[object]]:
        """Sightings of an agent write that reported success: a save it displaced without reading."""
        return [s for s in self.sightings if s[2] in self.successes]

    @property
    def dirty(self) -> list[list[object]]:
        """Sightings of an agent write that reported a conflict (it stood at the path for an instant
        before it was swapped back, and the saver read it then)."""
        return [s for s in self.sightings if s[2] not in self.successes]

    @property
    def sightings(self) -> list[list[object]]:
        found = self.saver["sightings"]
        assert isinstance(found, list)
        return found

    def summary(self, style: str) -> str:
        return (
            f"{style}: {self.trials} agent writes ({len(self.successes)} succeeded, {len(self.conflicts)} "
            f"conflicts), {self.saver['saves']} saves, {len(self.losses)} lost, {len(self.dirty)} dirty reads"
        )


Replace = Callable[[Path, str, bytes], None]


def kbseek_replace(root: Path) -> Replace:
    target = writable_path(WritePolicy(root, folders=("",)), "note.md")
    return lambda _path, expected, data: _discard(replace_if_unchanged(target, expected, data))


def naive_replace(path: Path, expected: str, data: bytes) -> None:
    """The replace the notes warn about: compare again, then rename over the note."""
    if note_hash(path.read_bytes()) != expected:
        raise NoteConflict("changed", "note.md")
    tmp = path.with_name(".naive.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _discard(_: object) -> None:
    return None


def race(root: Path, style: str, seconds: float, replace: Replace, *, stop_at_loss: bool = False) -> Race:
    note = root / "note.md"
    note.write_bytes(b"saver=0 agent=start\n")
    saver = subprocess.Popen(
        [sys.executable, "-c", SAVER, str(note), style, str(seconds)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert saver.stdin is not None and saver.stdout is not None
    assert saver.stdout.readline().strip() == "ready"
    saver.stdin.write("go\n")
    saver.stdin.flush()
    result = Race()
    rng = random.Random(11)
    until = time.monotonic() + seconds
    try:
        while time.monotonic() < until:
            data = note.read_bytes()
            m = FIELD.match(data)
            seen = int(m[1]) if m else -1
            result.trials += 1
            me = f"a{result.trials}"
            new = b"saver=%d agent=%s\n" % (seen, me.encode()) + b"a" * rng.randrange(0, 48_000)
            try:
                replace(note, note_hash(data), new)
            except NoteConflict:
                result.conflicts.add(me)
            else:
                result.successes.add(me)
        out, _ = saver.communicate(timeout=60)
    finally:
        if saver.poll() is None:
            saver.kill()
            saver.wait()
    result.saver = json.loads(out.strip().splitlines()[-1])
    final = FIELD.match(note.read_bytes())
    assert final is not None
    if not result.losses and not stop_at_loss:
        assert int(final[1]) == result.saver["last"], "the note does not hold the saver's last save"
    return result


def leftovers(root: Path) -> list[str]:
    return sorted(p.name for p in root.rglob(".kbseek-*"))


@pytest.mark.parametrize("style", ["rename", "in-place"])
def test_no_save_is_lost_to_an_agent_write_racing_an_editor(tmp_path: Path, style: str) -> None:
    result = race(tmp_path, style, RACE_SECONDS, kbseek_replace(tmp_path))
    print(result.summary(style))
    assert result.losses == [], result.summary(style)
    assert result.successes, "the agent never got a write in: the race proved nothing"
    assert result.conflicts, "no write ever met a save: the race proved nothing"
    assert leftovers(tmp_path) == []


def test_the_oracle_sees_the_saves_a_naive_replace_loses(tmp_path: Path) -> None:
    result = race(tmp_path, "rename", 4.0, naive_replace, stop_at_loss=True)
    print(result.summary("naive replace, rename-style saver"))
    assert result.losses, "a re-read then rename lost nothing: the oracle cannot see a loss"


# -- kill -9 ----------------------------------------------------------------------------------------

ZYGOTE = textwrap.dedent(
    r"""
    import json, os, signal, sys
    from pathlib import Path
    from kbseek.write import steps
    from kbseek.write.atomic import create_exclusive, note_hash, replace_if_unchanged
    from kbseek.write.guard import WritePolicy, writable_path

    def run(job):
        root = Path(job["root"])
        target = writable_path(WritePolicy(root, folders=("",)), job["rel"])
        seen = {}
        def hook(step):
            seen[step] = seen.get(step, 0) + 1
            if step == job.get("person_at") and seen[step] == 1:
                tmp = root / "person.saving"
                tmp.write_bytes(bytes.fromhex(job["person"]))
                os.replace(tmp, root / job["rel"])
            if step == job.get("kill_at") and seen[step] == job.get("nth", 1):
                os.kill(os.getpid(), signal.SIGKILL)
        steps.hook = hook
        if job["op"] == "create":
            create_exclusive(target, bytes.fromhex(job["data"]))
        elif job["op"] == "replace":
            current = (root / job["rel"]).read_bytes()
            replace_if_unchanged(target, note_hash(current), bytes.fromhex(job["data"]))
        else:  # loop: replace with one self-checking content after another until killed
            current = (root / job["rel"]).read_bytes()
            n = int(current.split(b":", 1)[0])
            while True:
                n += 1
                body = os.urandom(8).hex().encode() * (n % 5000)
                new = b"%d:%s:" % (n, note_hash(body).encode()) + body
                replace_if_unchanged(target, note_hash(current), new)
                current = new

    print("ready", flush=True)
    for line in sys.stdin:
        job = json.loads(line)
        pid = os.fork()
        if pid == 0:
            try:
                run(job)
            except BaseException as exc:
                sys.stderr.write(f"{type(exc).__name__}: {exc}\n")
                os._exit(3)
            os._exit(0)
        print(json.dumps({"pid": pid}), flush=True)
        _, status = os.waitpid(pid, 0)
        print(json.dumps({"status": os.waitstatus_to_exitcode(status)}), flush=True)
    """
)


class Zygote:
    """One process that imports kbseek once and forks a child per job, so a thousand kills cost no imports."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc

    def start(self, **job: object) -> int:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()
        return int(json.loads(self.proc.stdout.readline())["pid"])

    def status(self) -> int:
        assert self.proc.stdout is not None
        return int(json.loads(self.proc.stdout.readline())["status"])

    def run(self, **job: object) -> int:
        self.start(**job)
        return self.status()


@contextmanager
def zygote() -> Iterator[Zygote]:
    proc = subprocess.Popen(
        [sys.executable, "-c", ZYGOTE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    try:
        yield Zygote(proc)
    finally:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.close()
        proc.wait(timeout=30)
        proc.stdout.close()


@pytest.fixture(scope="module")
def forks() -> Iterator[Zygote]:
    with zygote() as z:
        yield z


KILLED = -signal.SIGKILL
OLD, NEW, PERSON = b"old note\n" * 1000, b"new note\n" * 3000, b"the person's save\n" * 500
REPLACE_STEPS = ["compared", "written", "synced", "linked", "ready", "exchanged", "checked", "done"]


@pytest.mark.parametrize("step", REPLACE_STEPS)
def test_a_replace_killed_at_any_step_leaves_the_old_or_the_new_note(
    tmp_path: Path, forks: Zygote, step: str
) -> None:
    note = tmp_path / "note.md"
    note.write_bytes(OLD)
    assert forks.run(op="replace", root=str(tmp_path), rel="note.md", data=NEW.hex(), kill_at=step) == KILLED
    before_swap = REPLACE_STEPS.index(step) < REPLACE_STEPS.index("exchanged")
    assert note.read_bytes() == (OLD if before_swap else NEW)
    sweep_leftovers(tmp_path, settle=0)
    assert leftovers(tmp_path) == []
    assert note.read_bytes() == (OLD if before_swap else NEW)


@pytest.mark.parametrize("step", ["written", "synced", "linked", "done"])
def test_a_create_killed_at_any_step_leaves_no_note_or_the_whole_note(
    tmp_path: Path, forks: Zygote, step: str
) -> None:
    note = tmp_path / "new.md"
    assert forks.run(op="create", root=str(tmp_path), rel="new.md", data=NEW.hex(), kill_at=step) == KILLED
    assert not note.exists() if step in ("written", "synced") else note.read_bytes() == NEW
    sweep_leftovers(tmp_path, settle=0)
    assert leftovers(tmp_path) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ([] if step in ("written", "synced") else ["new.md"])


def test_a_writer_killed_after_swapping_out_a_fresh_save_gets_it_put_back_by_the_sweep(
    tmp_path: Path, forks: Zygote
) -> None:
    """The worst moment: a person saved (by rename) just before the swap, so the swap displaced
    their save, and the writer died before looking at what it displaced. The note holds the
    agent's text; the person's save is only under the temporary name. The sweep puts it back."""
    note = tmp_path / "note.md"
    note.write_bytes(OLD)
    status = forks.run(
        op="replace", root=str(tmp_path), rel="note.md", data=NEW.hex(),
        person_at="ready", person=PERSON.hex(), kill_at="exchanged",
    )  # fmt: skip
    assert status == KILLED
    assert note.read_bytes() == NEW  # for now: the agent's text, the person's save aside
    assert len(leftovers(tmp_path)) == 1
    settled = sweep_leftovers(tmp_path, settle=0)
    assert [s.outcome for s in settled] == ["restored"]
    assert note.read_bytes() == PERSON
    assert leftovers(tmp_path) == [] and sorted(p.name for p in tmp_path.iterdir()) == ["note.md"]


def test_a_writer_that_meets_a_fresh_save_at_the_swap_puts_it_back_and_reports_a_conflict(
    tmp_path: Path, forks: Zygote
) -> None:
    note = tmp_path / "note.md"
    note.write_bytes(OLD)
    status = forks.run(
        op="replace",
        root=str(tmp_path),
        rel="note.md",
        data=NEW.hex(),
        person_at="ready",
        person=PERSON.hex(),
    )
    assert status == 3  # NoteConflict
    assert note.read_bytes() == PERSON
    assert leftovers(tmp_path) == []


def _whole(data: bytes) -> bool:
    """Whether a loop content is complete: its header names the hash of the body that follows."""
    _, digest, body = data.split(b":", 2)
    return note_hash(body) == digest.decode()


def test_writers_killed_at_random_moments_never_leave_a_partial_note(tmp_path: Path, forks: Zygote) -> None:
    note = tmp_path / "note.md"
    note.write_bytes(b"0:" + note_hash(b"").encode() + b":")
    rng = random.Random(5)
    trials, version, kills, mid_write, advanced = 150, 0, 0, 0, 0
    for _ in range(trials):
        pid = forks.start(op="loop", root=str(tmp_path), rel="note.md")
        time.sleep(rng.uniform(0, 0.03))
        os.kill(pid, signal.SIGKILL)
        kills += forks.status() == KILLED
        data = note.read_bytes()
        assert _whole(data), "a partial note after a kill"
        now = int(data.split(b":", 1)[0])
        assert now >= version
        advanced += now > version
        version = now
        mid_write += bool(leftovers(tmp_path))  # killed with a temporary file out: inside a write
        sweep_leftovers(tmp_path, settle=0)
        assert leftovers(tmp_path) == []
        assert note.read_bytes() == data
    print(
        f"random kills: {kills} of {trials} writers killed, {mid_write} inside a write with a temporary file out, "
        f"{advanced} after at least one write landed; {version} versions written, none partial"
    )
    assert kills == trials and mid_write > 0 and advanced > 0
