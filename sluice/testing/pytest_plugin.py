"""pytest plugin: a real Sluice server for your tests, where ``fakeredis`` used to be.

Installed with the package (entry point ``pytest11``), so pytest loads it in every project
that has ``sluice`` installed. It starts nothing until a test asks for one of its fixtures:

- ``sluice_server``: the session's server (``BackgroundServer``: ``.url``, ``.port``,
  ``.dir``), started on the first request, on 127.0.0.1 and a free port, in a background
  thread; emptied (FLUSHALL) after every test that used it.
- ``sluice_url``: its ``redis://`` URL, with the configured client credentials.
- ``redis_client`` / ``async_redis_client``: redis-py clients (``redis.Redis`` /
  ``redis.asyncio.Redis``) on that URL, closed after the test. The async one needs
  pytest-asyncio.
- ``sluice_session_server``: the same server without the flush between tests.
- ``sluice_server_factory``: ``factory(*lines, **directives)`` starts a server of its own
  (files kept in the test's ``tmp_path`` until it ends: start a second one on ``dir=`` the
  first one's to test a restart); all are stopped after the test.

Settings (``[tool.pytest.ini_options]`` / ``pytest.ini``; the command-line flags win):

============================ =============================== ==========================
ini name                     flag                            meaning
============================ =============================== ==========================
``sluice_protocol``          ``--sluice-protocol 3``         RESP version of the clients
``sluice_persistence``       ``--sluice-persistence aof``    ``none``, ``rdb`` or ``aof``
``sluice_users``             --                              ACL users, one ``user``
                                                             directive's words per line
``sluice_username``,         --                              who the clients log in as
``sluice_password``
``sluice_decode_responses``  --                              clients return ``str``
``sluice_config``            --                              more redis.conf lines
============================ =============================== ==========================

Persistence files go to a directory of pytest's ``tmp_path_factory`` (kept for the last
runs, like ``tmp_path``): ``rdb`` uses Redis's default save points, ``aof`` turns on
``appendonly``. redis-py is imported only by the client fixtures (``pip install redis``).
"""

from __future__ import annotations

import importlib.util
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    import redis
    import redis.asyncio

    from sluice.server.embedded import BackgroundServer

PERSISTENCE = {
    "none": ['save ""', "appendonly no"],
    "rdb": ['save "3600 1 300 100 60 10000"', "appendonly no"],
    "aof": ['save ""', "appendonly yes", "appendfsync everysec"],
}


@dataclass(frozen=True)
class SluiceSettings:
    """What the plugin's fixtures were configured with (ini file, then command line)."""

    protocol: int
    persistence: str
    users: tuple[str, ...]
    username: str | None
    password: str | None
    decode_responses: bool
    config: tuple[str, ...]

    def config_lines(self) -> list[str]:
        return [*PERSISTENCE[self.persistence], *(f"user {u}" for u in self.users),
                *self.config]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("sluice", "Sluice server for tests (sluice.testing.pytest_plugin)")
    group.addoption("--sluice-protocol", choices=("2", "3"), default=None,
                    help="RESP version the redis_client fixtures speak (ini: sluice_protocol)")
    group.addoption("--sluice-persistence", choices=tuple(PERSISTENCE), default=None,
                    help="persistence of the session's server (ini: sluice_persistence)")
    parser.addini("sluice_protocol", "RESP version of the redis_client fixtures (2 or 3)",
                  default="2")
    parser.addini("sluice_persistence", "none, rdb or aof (files in a pytest temp dir)",
                  default="none")
    parser.addini("sluice_users", "ACL users: the words of one 'user' directive per line",
                  type="linelist", default=[])
    parser.addini("sluice_username", "user the client fixtures log in as", default="")
    parser.addini("sluice_password", "password the client fixtures log in with", default="")
    parser.addini("sluice_decode_responses", "client fixtures decode replies to str",
                  type="bool", default=False)
    parser.addini("sluice_config", "more redis.conf lines for the server", type="linelist",
                  default=[])


def _settings(config: pytest.Config) -> SluiceSettings:
    protocol = config.getoption("sluice_protocol") or config.getini("sluice_protocol")
    persistence = (config.getoption("sluice_persistence")
                   or config.getini("sluice_persistence")).strip().lower()
    if str(protocol).strip() not in ("2", "3"):
        raise pytest.UsageError(f"sluice_protocol must be 2 or 3, not {protocol!r}")
    if persistence not in PERSISTENCE:
        raise pytest.UsageError(
            f"sluice_persistence must be one of {', '.join(PERSISTENCE)}, not {persistence!r}")
    return SluiceSettings(
        protocol=int(protocol),
        persistence=persistence,
        users=tuple(config.getini("sluice_users")),
        username=config.getini("sluice_username") or None,
        password=config.getini("sluice_password") or None,
        decode_responses=bool(config.getini("sluice_decode_responses")),
        config=tuple(config.getini("sluice_config")),
    )


@pytest.fixture(scope="session")
def sluice_settings(pytestconfig: pytest.Config) -> SluiceSettings:
    return _settings(pytestconfig)


@pytest.fixture(scope="session")
def sluice_session_server(sluice_settings: SluiceSettings,
                          tmp_path_factory: pytest.TempPathFactory) -> Iterator[BackgroundServer]:
    """The session's Sluice server (started on first use, stopped at the end)."""
    from sluice.server.embedded import BackgroundServer

    data = tmp_path_factory.mktemp("sluice-data")
    server = BackgroundServer(*sluice_settings.config_lines(), dir=str(data),
                              username=sluice_settings.username,
                              password=sluice_settings.password).start()
    yield server
    server.stop()


@pytest.fixture
def sluice_server(sluice_session_server: BackgroundServer) -> Iterator[BackgroundServer]:
    """The session's server, emptied after the test."""
    yield sluice_session_server
    if sluice_session_server.running:
        sluice_session_server.flushall()


@pytest.fixture
def sluice_url(sluice_server: BackgroundServer) -> str:
    return sluice_server.url


def _redis_module() -> Any:
    try:
        import redis
    except ImportError:  # pragma: no cover - depends on the user's environment
        pytest.fail("the redis_client fixtures need redis-py: pip install redis", False)
    return redis


@pytest.fixture
def redis_client(sluice_server: BackgroundServer,
                 sluice_settings: SluiceSettings) -> Iterator[redis.Redis]:
    client = _redis_module().Redis.from_url(
        sluice_server.url, protocol=sluice_settings.protocol,
        decode_responses=sluice_settings.decode_responses)
    yield client
    client.close()


if importlib.util.find_spec("pytest_asyncio") is not None:
    import pytest_asyncio

    @pytest_asyncio.fixture
    async def async_redis_client(sluice_server: BackgroundServer,
                                 sluice_settings: SluiceSettings
                                 ) -> AsyncIterator[redis.asyncio.Redis]:
        client = _redis_module().asyncio.Redis.from_url(
            sluice_server.url, protocol=sluice_settings.protocol,
            decode_responses=sluice_settings.decode_responses)
        yield client
        await client.aclose()

else:  # pragma: no cover - depends on the user's environment

    @pytest.fixture
    def async_redis_client() -> None:
        pytest.fail("async_redis_client needs pytest-asyncio: pip install pytest-asyncio",
                    False)


@pytest.fixture
def sluice_server_factory(tmp_path: Path) -> Iterator[Callable[..., BackgroundServer]]:
    """``factory(*lines, dir=None, **directives)``: a server of the test's own."""
    from sluice.server.embedded import BackgroundServer

    started: list[BackgroundServer] = []

    def factory(*lines: str, dir: str | None = None, **directives: Any) -> BackgroundServer:
        where = dir or str(tmp_path / f"sluice-{len(started)}")
        Path(where).mkdir(parents=True, exist_ok=True)
        server = BackgroundServer(*lines, dir=where, **directives).start()
        started.append(server)
        return server

    yield factory
    for server in started:
        server.stop()
