"""The progress tracker's arithmetic (rate, ETA, phases) and its wording, on a fake clock."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kbseek.cli import _LogLines
from kbseek.progress import ProgressTracker, describe, format_duration, format_rate


class FakeClock:
    """Time moves only when a test says so: no sleeping, no wall-clock assertions."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def test_rate_is_items_over_the_phase_elapsed_time_and_eta_the_rest_at_that_rate() -> None:
    clock = FakeClock()
    tracker = ProgressTracker(clock)
    tracker.update("embed", 0, 1200)
    clock.advance(40.0)
    snap = tracker.update("embed", 400, 1200)
    assert snap.rate == pytest.approx(10.0)
    assert snap.eta == pytest.approx(80.0)
    assert snap.elapsed == pytest.approx(40.0)
    assert snap.unit == "chunks"
    assert tracker.current is snap


def test_nothing_done_or_no_time_passed_means_no_rate_and_no_eta() -> None:
    clock = FakeClock()
    tracker = ProgressTracker(clock)
    first = tracker.update("parse", 0, 10)
    assert first.rate is None and first.eta is None
    same_instant = tracker.update("parse", 3, 10)  # a fake clock that did not move: no division by zero
    assert same_instant.rate is None and same_instant.eta is None


def test_a_new_phase_restarts_the_clock_so_rates_are_never_mixed() -> None:
    clock = FakeClock()
    tracker = ProgressTracker(clock)
    tracker.update("parse", 0, 100)
    clock.advance(10.0)
    tracker.update("parse", 100, 100)  # 10 files/s
    clock.advance(1.0)
    start = tracker.update("embed", 0, 500)
    assert start.elapsed == 0.0 and start.rate is None
    clock.advance(5.0)
    snap = tracker.update("embed", 50, 500)
    assert snap.rate == pytest.approx(10.0)  # 50 chunks in 5 s, not 150 items in 16 s
    assert snap.eta == pytest.approx(45.0)


def test_a_finished_phase_has_eta_zero_and_an_unknown_total_has_no_eta() -> None:
    clock = FakeClock()
    tracker = ProgressTracker(clock)
    tracker.update("scan", 0, None)
    clock.advance(0.5)
    counting = tracker.update("scan", 120, None)
    assert counting.total is None and counting.eta is None and counting.rate == pytest.approx(240.0)
    done = tracker.update("scan", 120, 120)
    assert done.eta == 0.0


@given(
    total=st.integers(min_value=1, max_value=10**6),
    steps=st.lists(
        st.tuples(st.floats(min_value=0.0, max_value=1e4), st.integers(min_value=0, max_value=10**4)),
        min_size=1,
        max_size=30,
    ),
)
def test_rate_and_eta_are_consistent_for_any_sequence_of_counts(
    total: int, steps: list[tuple[float, int]]
) -> None:
    clock = FakeClock()
    tracker = ProgressTracker(clock)
    tracker.update("embed", 0, total)
    done, elapsed = 0, 0.0
    for dt, n in steps:
        clock.advance(dt)
        elapsed += dt
        done = min(total, done + n)
        snap = tracker.update("embed", done, total)
        assert snap.elapsed == pytest.approx(elapsed, rel=1e-9, abs=1e-6)
        if snap.rate is None:
            assert done == 0 or snap.elapsed == 0
        else:
            assert snap.rate > 0
            assert snap.rate == pytest.approx(done / snap.elapsed)
        if done >= total:
            assert snap.eta == 0.0
        elif snap.rate is not None:
            assert snap.eta is not None and snap.eta >= 0
            assert snap.eta * snap.rate == pytest.approx(total - done)


@given(
    rate=st.floats(min_value=0.01, max_value=1e4),
    total=st.integers(min_value=2, max_value=10**5),
    fraction=st.floats(min_value=0.01, max_value=0.99),
)
def test_at_a_steady_rate_the_eta_predicts_the_true_finish(rate: float, total: int, fraction: float) -> None:
    clock = FakeClock()
    tracker = ProgressTracker(clock)
    tracker.update("parse", 0, total)
    done = max(1, min(total - 1, int(total * fraction)))
    clock.advance(done / rate)
    snap = tracker.update("parse", done, total)
    assert snap.eta is not None
    assert snap.elapsed + snap.eta == pytest.approx(total / rate, rel=1e-6)


def test_the_plain_line_reads_like_the_issue_example() -> None:
    clock = FakeClock()
    tracker = ProgressTracker(clock)
    tracker.update("embed", 0, 1200)
    clock.advance(340 / 11.2)
    snap = tracker.update("embed", 340, 1200)
    assert snap.describe() == "embed 340/1200 chunks (28%), 11.2/s, ETA 1m17s"
    assert snap.describe_start() == "embed started: 1200 chunks"


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (("scan", 0, None, "files", None, None), "scan 0 files"),
        (("parse", 19, 19, "files", 60.2, 0.0), "parse 19/19 files (100%), 60.2/s"),
        (("parse", 0, 0, "files", None, None), "parse 0/0 files"),
        (("embed", 5, 900, "chunks", 0.42, 2131.0), "embed 5/900 chunks (0%), 0.42/s, ETA 35m31s"),
    ],
)
def test_describe_drops_what_is_not_known(args: tuple, line: str) -> None:
    assert describe(*args) == line


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (0.4, "0s"), (59.4, "59s"), (60, "1m00s"), (77, "1m17s"), (3599, "59m59s"), (3600, "1h00m"),
     (7385, "2h03m"), (-3, "0s")],
)  # fmt: skip
def test_durations_are_short(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


@given(st.floats(min_value=0, max_value=1e9, allow_nan=False))
def test_a_duration_always_formats(seconds: float) -> None:
    assert format_duration(seconds)[-1] in "sm"


def test_rates_keep_the_digits_people_read() -> None:
    assert [format_rate(r) for r in (0.421, 11.24, 840.4)] == ["0.42", "11.2", "840"]


def test_log_lines_stay_silent_in_a_short_pass_then_speak_every_interval_and_at_phase_starts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    clock = FakeClock()
    tracker = ProgressTracker(clock)
    lines = _LogLines(5.0, clock=clock)
    lines.note("loading the embedding model")
    lines(tracker.update("scan", 0, None))
    clock.advance(1.0)
    lines(tracker.update("parse", 0, 100))
    clock.advance(3.0)
    lines(tracker.update("parse", 40, 100))
    assert capsys.readouterr().err == ""  # 4 s into the pass: nothing yet
    clock.advance(1.0)
    lines(tracker.update("parse", 50, 100))  # 5 s: the first line
    clock.advance(2.0)
    lines(tracker.update("parse", 70, 100))  # 2 s later: not yet
    clock.advance(3.0)
    lines(tracker.update("parse", 100, 100))  # 5 s after the last line
    lines(tracker.update("embed", 0, 800))  # a phase starts: said at once
    clock.advance(1.0)
    lines(tracker.update("embed", 32, 800))
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "kbseek: parse 50/100 files (50%), 12.5/s, ETA 4s",
        "kbseek: parse 100/100 files (100%), 11.1/s",
        "kbseek: embed started: 800 chunks",
    ]
    assert not any("\r" in line or "\x1b" in line for line in err)
