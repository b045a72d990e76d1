"""The container image as its users run it (issue 29): `make image-test` builds it (scripts/image-test.sh) and runs
this module with ZMTPLAB_IMAGE (the tag) and ZMTPLAB_IMAGE_ENGINE (docker or podman); without them it is skipped.

A container of the image is started as the README says, its port published on 127.0.0.1 and its data directory on
a volume of its own; the checks go over that port like any client. Then the container is replaced by a new one
on the same volume, and what was uploaded and run before is still there."""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from installkit import (
    ServerGone,
    check_lessons,
    check_pages,
    corpus_run,
    dissected,
    get_json,
    upload,
    wait_for,
    wait_healthy,
)
from testkit import free_port

IMAGE = os.environ.get("ZMTPLAB_IMAGE")
ENGINE = os.environ.get("ZMTPLAB_IMAGE_ENGINE", "podman")
REPO = Path(__file__).resolve().parents[2]
DATA_DIR = "/var/lib/zmtplab"

pytestmark = [pytest.mark.package,
              pytest.mark.skipif(not IMAGE, reason="`make image-test` builds the image and runs these tests")]


def engine(*args: str, check: bool = True, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """One command of the container engine; its output in the failure."""
    done = subprocess.run([ENGINE, *args], capture_output=True, text=True, timeout=timeout, check=False)
    if check:
        assert done.returncode == 0, f"{ENGINE} {' '.join(args)}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


@dataclass
class Deployment:
    """Containers of the image, one at a time, on one data volume (as the README runs it)."""

    volume: str
    name: str = ""
    port: int = 0
    started: list[str] = field(default_factory=list)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> str:
        """A new container on the volume; its base URL once it answers."""
        self.name, self.port = f"zmtplab-test-{uuid.uuid4().hex[:8]}", free_port()
        engine("run", "-d", "--name", self.name, "-p", f"127.0.0.1:{self.port}:8000", "-v", f"{self.volume}:{DATA_DIR}",
               IMAGE or "")
        self.started.append(self.name)
        try:
            wait_healthy(self.base, within=180, alive=self.exited)
        except ServerGone:
            raise
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{self.logs()}") from None
        return self.base

    def exited(self) -> str | None:
        """None while the container runs (a `Popen.poll` for `wait_for`)."""
        running = engine("inspect", "--format", "{{.State.Running}}", self.name, check=False).stdout.strip()
        return None if running == "true" else f"not running ({running or 'gone'})\n{self.logs()}"

    def logs(self) -> str:
        return engine("logs", self.name, check=False).stdout[-4000:]

    def replace(self) -> str:
        """Stops and removes the container (as an upgrade does) and starts a new one on the same volume."""
        engine("stop", "-t", "30", self.name)
        engine("rm", self.name)
        return self.start()

    def remove(self) -> None:
        for name in self.started:
            engine("rm", "-f", name, check=False)
        engine("volume", "rm", "-f", self.volume, check=False)


@pytest.fixture(scope="module")
def deployment() -> Iterator[Deployment]:
    volume = f"zmtplab-test-data-{uuid.uuid4().hex[:8]}"
    engine("volume", "create", volume)
    deployed = Deployment(volume)
    try:
        deployed.start()
        yield deployed
    finally:
        deployed.remove()


def test_the_image_is_debian_with_a_healthcheck_a_volume_and_no_apt_cache() -> None:
    def inspect(what: str) -> str:  # (a template: docker and podman lay out their JSON differently)
        return engine("image", "inspect", "--format", f"{{{{json .Config.{what}}}}}", IMAGE or "").stdout

    health = json.loads(inspect("Healthcheck"))
    assert health and "/api/health" in " ".join(health["Test"]), health
    assert DATA_DIR in json.loads(inspect("Volumes")), inspect("Volumes")
    assert json.loads(inspect("User")) == "zmtplab"
    script = ("cat /etc/debian_version; /opt/zmtplab/bin/python -c 'import sys; print(sys.base_prefix)'; "
              "ls /var/lib/apt/lists | grep -v -x -e lock -e partial | wc -l; "
              "ls /var/cache/apt/archives | grep -c '[.]deb$' || true; zmtplab --version")
    out = engine("run", "--rm", "--entrypoint", "sh", IMAGE or "", "-c", script).stdout.split()
    assert out[0].startswith("12.") and out[1] == "/usr" and out[2:4] == ["0", "0"], out
    assert out[4:] == ["zmtplab", "0.1.0"], out


def test_the_container_is_healthy(deployment: Deployment) -> None:
    assert engine("exec", deployment.name, "id", "-u").stdout.strip() != "0"
    if ENGINE == "podman":  # (podman runs a HEALTHCHECK from systemd timers, which a container host may lack)
        assert engine("healthcheck", "run", deployment.name).returncode == 0
        return
    wait_for("the HEALTHCHECK's healthy",
             lambda: engine("inspect", "--format", "{{.State.Health.Status}}", deployment.name).stdout.strip()
             == "healthy", 120)


@pytest.mark.browser
def test_every_page_loads(deployment: Deployment) -> None:
    pages = check_pages(deployment.base)
    assert pages["/corpus.html"]["unavailable"] is None, pages  # (Spark runs in the image)


def test_every_lesson_step_answers(deployment: Deployment) -> None:
    assert check_lessons(deployment.base) >= 90


@pytest.mark.timeout(1200)
def test_an_upload_and_a_corpus_run_outlive_their_container(deployment: Deployment) -> None:
    base = deployment.base
    capture_id = upload(base, REPO / "captures" / "broker.pcapng")
    summary = dissected(base, capture_id)
    assert summary["events"] > 0 and len(summary["connections"]) >= 2, summary
    first = get_json(base, f"/api/captures/{capture_id}/events?limit=50")
    started = time.monotonic()
    run = corpus_run(base, [capture_id])
    assert run["summary"]["events"] > 0, run
    rows = get_json(base, f"/api/corpus/runs/{run['id']}/tables/events?limit=5")
    assert rows["total"] == run["summary"]["events"] and rows["rows"][0]["kind"] == "greeting", rows
    print(f"corpus run in the container: {time.monotonic() - started:.1f} s")

    base = deployment.replace()
    again = dissected(base, capture_id)
    assert (again["events"], again["connections"]) == (summary["events"], summary["connections"])
    assert get_json(base, f"/api/captures/{capture_id}/events?limit=50") == first
    kept = get_json(base, f"/api/corpus/runs/{run['id']}")
    assert kept["state"] == "done" and kept["summary"] == run["summary"], kept
