"""The image in real containers (``make docker-test``): it turns healthy, keeps its data
across stop/start and in a new container on the same volume, takes sluice-server's options
and config files as the official redis image takes redis-server's, stays healthy with a
password, logs a clean stop on SIGTERM, and runs as the unprivileged user."""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator

import pytest
import redis

IMAGE = os.environ.get("SLUICE_DOCKER_IMAGE", "sluice:test")
pytestmark = pytest.mark.timeout(180)


def docker(*args: str, check: bool = True, timeout: float = 120) -> str:
    done = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout)
    if check and done.returncode != 0:
        raise AssertionError(f"docker {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout.strip()


def wait_for(predicate: Callable[[], object], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


class Container:
    def __init__(self, name: str) -> None:
        self.name = name

    def state(self) -> dict:
        return json.loads(docker("inspect", "-f", "{{json .State}}", self.name))

    def health(self) -> str:
        return self.state().get("Health", {}).get("Status", "none")

    def wait_healthy(self) -> None:
        wait_for(lambda: self.health() == "healthy", f"{self.name} to be healthy")

    def port(self) -> int:
        return int(docker("port", self.name, "6379/tcp").splitlines()[0].rsplit(":", 1)[1])

    def client(self, **kw: object) -> redis.Redis:
        client = redis.Redis(host="127.0.0.1", port=self.port(), socket_timeout=10, **kw)
        wait_for(lambda: _answers(client), f"{self.name} to answer")
        return client

    def logs(self) -> str:
        done = subprocess.run(["docker", "logs", self.name], capture_output=True, text=True,
                              timeout=60)
        return done.stdout + done.stderr


def _answers(client: redis.Redis) -> bool:
    try:
        client.ping()
    except redis.AuthenticationError:
        return True
    except (redis.ConnectionError, redis.ResponseError):
        return False
    return True


@pytest.fixture
def volume() -> Iterator[str]:
    name = f"sluice-test-{uuid.uuid4().hex[:8]}"
    docker("volume", "create", name)
    yield name
    # Containers that use it go first (the run fixture may be torn down after this one).
    users = docker("ps", "-aq", "--filter", f"volume={name}", check=False).split()
    if users:
        docker("rm", "-f", "-v", *users, check=False)
    docker("volume", "rm", "-f", name, check=False)


@pytest.fixture
def run() -> Iterator[Callable[..., Container]]:
    started: list[str] = []

    def start(*args: str, volume: str | None = None, docker_args: tuple[str, ...] = ()
              ) -> Container:
        name = f"sluice-test-{uuid.uuid4().hex[:8]}"
        cmd = ["run", "-d", "--name", name, "-p", "127.0.0.1::6379",
               "--health-interval", "1s", "--health-start-period", "30s", *docker_args]
        if volume:
            cmd += ["-v", f"{volume}:/data"]
        docker(*cmd, IMAGE, *args)
        started.append(name)
        return Container(name)

    yield start
    for name in started:
        docker("rm", "-f", "-v", name, check=False)  # -v: its anonymous /data volume too


def test_healthy_as_the_unprivileged_user_and_no_build_tree(run: Callable[..., Container],
                                                            volume: str) -> None:
    c = run(volume=volume)
    c.wait_healthy()
    uid = docker("exec", c.name, "sh", "-c", "awk '/^Uid:/ {print $2}' /proc/1/status")
    assert uid == "999" and docker("exec", c.name, "id", "-un") == "root"  # exec default
    assert docker("exec", c.name, "stat", "-c", "%U", "/data") == "sluice"
    assert docker("exec", c.name, "sh", "-c", "test ! -e /src && echo clean") == "clean"
    r = c.client(decode_responses=True)
    assert r.config_get("appendonly") == {"appendonly": "yes"}
    assert r.config_get("dir") == {"dir": "/data"}
    assert r.config_get("save") == {"save": "3600 1 300 100 60 10000"}


def test_data_survives_stop_start_and_a_new_container_on_the_volume(
        run: Callable[..., Container], volume: str) -> None:
    c = run(volume=volume)
    r = c.client()
    for i in range(100):
        r.xadd("events", {"n": str(i)})
    r.set("k", "v")
    docker("stop", c.name)
    logs = c.logs()
    for step in ("Received SIGTERM scheduling shutdown...", "Calling fsync() on the AOF file.",
                 "Saving the final RDB snapshot before exiting.",
                 "Sluice is now ready to exit, bye bye..."):
        assert step in logs, logs
    assert c.state()["ExitCode"] == 0
    docker("start", c.name)
    r = c.client()
    assert r.xlen("events") == 100 and r.get("k") == b"v"
    docker("rm", "-f", "-v", c.name)
    out = docker("run", "--rm", "-v", f"{volume}:/data", "--entrypoint", "sh", IMAGE, "-c",
                 "ls /data /data/appendonlydir")
    assert "dump.rdb" in out and "appendonly.aof.manifest" in out
    fresh = run(volume=volume)
    assert fresh.client().xlen("events") == 100


def test_options_keep_the_containers_defaults(run: Callable[..., Container]) -> None:
    c = run("--appendonly", "no", "--hz", "17")
    r = c.client(decode_responses=True)
    assert r.config_get("appendonly") == {"appendonly": "no"}
    assert r.config_get("hz") == {"hz": "17"}
    assert r.config_get("bind") == {"bind": "* -::*"}  # reachable through the published port
    assert r.config_get("protected-mode") == {"protected-mode": "no"}
    assert r.config_get("dir") == {"dir": "/data"}


def test_a_config_file_in_the_volume(run: Callable[..., Container], volume: str) -> None:
    docker("run", "--rm", "-v", f"{volume}:/data", "--entrypoint", "sh", IMAGE, "-c",
           "printf 'hz 19\\nappendonly no\\n' > /data/sluice.conf")
    c = run("/data/sluice.conf", volume=volume)
    r = c.client(decode_responses=True)
    assert r.config_get("hz") == {"hz": "19"}
    assert r.config_get("appendonly") == {"appendonly": "no"}  # the file's word is kept
    assert r.config_get("dir") == {"dir": "/data"}


def test_healthy_with_a_password(run: Callable[..., Container]) -> None:
    c = run("--requirepass", "s3cret")
    c.wait_healthy()
    r = c.client(password="s3cret")
    assert r.ping()
    with pytest.raises(redis.AuthenticationError):
        redis.Redis(host="127.0.0.1", port=c.port()).get("k")
    log = json.loads(docker("inspect", "-f", "{{json .State.Health.Log}}", c.name))
    assert log and log[-1]["ExitCode"] == 0


def test_any_other_command_runs_as_given() -> None:
    out = docker("run", "--rm", IMAGE, "sluice-server", "--version")
    assert out.startswith("Sluice server v=")
    assert docker("run", "--rm", IMAGE, "python", "-c", "print('ok')") == "ok"
