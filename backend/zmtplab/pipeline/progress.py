"""Progress from Spark's status tracker: completed tasks of the run's jobs, per phase."""

from __future__ import annotations

import sys
import threading
import time
from typing import IO, Any


class ProgressMonitor(threading.Thread):
    """Polls `sc.statusTracker()` for the jobs of one job group and reports task counts.

    `reporter.emit(phase_fraction, done, total)` is called every `interval` seconds while the
    phase has Spark jobs; a phase's jobs are those first seen after it was entered.
    """

    def __init__(self, sc, group: str, reporter, interval: float = 0.5) -> None:
        super().__init__(name=f"progress-{group}", daemon=True)
        self.tracker = sc.statusTracker()
        self.group = group
        self.reporter = reporter
        self.interval = interval
        self._stop_event = threading.Event()
        self._phase_jobs: dict[str, set[int]] = {}
        self._stage_totals: dict[int, tuple[int, int]] = {}

    def stop(self) -> None:
        self._stop_event.set()
        if self.is_alive():
            self.join(timeout=5)

    def run(self) -> None:
        while not self._stop_event.wait(self.interval):
            try:
                self.poll()
            except Exception:  # the JVM may be shutting down; progress is best effort
                if self._stop_event.is_set():
                    return

    def poll(self) -> None:
        phase = self.reporter.phase
        known = set().union(*self._phase_jobs.values()) if self._phase_jobs else set()
        jobs = self._phase_jobs.setdefault(phase, set())
        for job_id in self.tracker.getJobIdsForGroup(self.group):
            if job_id not in known:
                jobs.add(job_id)
        if not jobs:
            return
        done = total = active = 0
        for job_id in jobs:
            info = self.tracker.getJobInfo(job_id)
            if info is None:
                continue
            for stage_id in info.stageIds:
                stage = self.tracker.getStageInfo(stage_id)
                if stage is not None:
                    self._stage_totals[stage_id] = (stage.numCompletedTasks, stage.numTasks)
                    active += stage.numActiveTasks
                # Stages that were skipped (shuffle reuse) or forgotten keep their last counts.
                d, n = self._stage_totals.get(stage_id, (0, 0))
                done += d
                total += n
        if total:
            self.reporter.emit(done / total, done, total, active_tasks=active)


class ProgressBar:
    """A one-line text progress bar for `run_pipeline(progress=...)` (redrawn in place on a tty)."""

    def __init__(self, stream: IO[str] | None = None, width: int = 30) -> None:
        self.stream = stream or sys.stderr
        self.width = width
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.last_phase = None
        self.last_draw = 0.0
        self.lock = threading.Lock()

    def __call__(self, info: dict[str, Any]) -> None:
        with self.lock:
            phase = info["phase"]
            now = time.monotonic()
            if not self.tty:
                if phase != self.last_phase or info.get("done"):
                    self.stream.write(f"zmtplab pipeline: {phase}{' done' if info.get('done') else ''} "
                                      f"({info['fraction']:.0%}, {info['elapsed']:.1f}s)\n")
                    self.stream.flush()
                self.last_phase = phase
                return
            if phase == self.last_phase and now - self.last_draw < 0.2 and not info.get("done"):
                return
            self.last_phase, self.last_draw = phase, now
            filled = int(self.width * info["fraction"])
            tasks = f" {info['tasks_done']}/{info['tasks_total']} tasks" if info.get("tasks_total") else ""
            line = (f"\r[{'#' * filled}{'.' * (self.width - filled)}] {info['fraction']:4.0%} "
                    f"{phase:<12}{tasks:<18} {info['elapsed']:6.1f}s")
            self.stream.write(line)
            if info.get("done"):
                self.stream.write("\n")
            self.stream.flush()
