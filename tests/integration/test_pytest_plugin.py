"""The pytest plugin shipped with the package (``sluice.testing.pytest_plugin``), run the way a
user's project runs it: pytester writes a small project and runs pytest on it."""

from __future__ import annotations

import importlib.metadata
import threading

import pytest

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.timeout(120)


def plugin_args() -> list[str]:
    """``-p`` the plugin unless the installed package's entry point loads it already."""
    installed = any(ep.value == "sluice.testing.pytest_plugin"
                    for ep in importlib.metadata.entry_points(group="pytest11"))
    return [] if installed else ["-p", "sluice.testing.pytest_plugin"]


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("-q", "-p", "no:cacheprovider", *plugin_args(),
                              "-o", "asyncio_default_fixture_loop_scope=function", *args)


def test_fixtures_give_a_real_server_shared_by_the_session_and_emptied_per_test(
        pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_app="""
        import pytest

        PORTS = []

        def test_first(redis_client, sluice_url, sluice_server):
            assert sluice_url == f"redis://127.0.0.1:{sluice_server.port}/0"
            redis_client.xadd("events", {"kind": "signup"})
            assert redis_client.xlen("events") == 1
            assert redis_client.execute_command("CLIENT", "INFO").count(b"resp=2") == 1
            PORTS.append(sluice_server.port)

        def test_second_sees_an_empty_server_on_the_same_port(redis_client, sluice_server):
            assert redis_client.dbsize() == 0
            assert PORTS == [sluice_server.port]

        @pytest.mark.asyncio
        async def test_async_client(async_redis_client):
            await async_redis_client.set("k", "v")
            assert await async_redis_client.get("k") == b"v"
    """)
    run(pytester).assert_outcomes(passed=3)
    assert not [t for t in threading.enumerate() if t.name.startswith("sluice-server")]


def test_resp3_from_the_command_line_and_decoded_replies_from_the_ini(
        pytester: pytest.Pytester) -> None:
    pytester.makeini("""
        [pytest]
        sluice_protocol = 2
        sluice_decode_responses = true
    """)
    pytester.makepyfile(test_resp="""
        def test_resp3(redis_client):
            assert "resp=3" in redis_client.execute_command("CLIENT", "INFO")
            redis_client.set("k", "v")
            assert redis_client.get("k") == "v"
    """)
    run(pytester, "--sluice-protocol", "3").assert_outcomes(passed=1)


def test_acl_users_from_the_ini_and_the_clients_log_in_as_the_named_one(
        pytester: pytest.Pytester) -> None:
    pytester.makeini("""
        [pytest]
        sluice_users =
            alice on >wonderland ~app:* +@all
            default off
        sluice_username = alice
        sluice_password = wonderland
    """)
    pytester.makepyfile(test_acl="""
        import pytest
        import redis

        def test_alice_may_touch_app_keys_only(redis_client, sluice_url):
            assert sluice_url.startswith("redis://alice:wonderland@127.0.0.1:")
            assert redis_client.acl_whoami() == "alice"
            redis_client.set("app:1", "x")
            with pytest.raises(redis.exceptions.NoPermissionError):
                redis_client.set("other", "x")

        def test_flushed_between_tests_although_alice_may_not_flushall(redis_client):
            assert redis_client.exists("app:1") == 0
    """)
    run(pytester).assert_outcomes(passed=2)


@pytest.mark.parametrize("mode, expected", [("aof", "appendonlydir"), ("rdb", "dump.rdb")])
def test_persistence_in_a_temporary_directory(pytester: pytest.Pytester, mode: str,
                                             expected: str) -> None:
    pytester.makepyfile(test_persist=f"""
        import os

        def test_files(redis_client, sluice_server):
            redis_client.set("k", "v")
            if {mode!r} == "rdb":
                redis_client.save()
            assert os.path.exists(os.path.join(sluice_server.dir, {expected!r}))
            assert "pytest" in sluice_server.dir  # pytest's own temporary directory
    """)
    run(pytester, "--sluice-persistence", mode).assert_outcomes(passed=1)


def test_the_factory_restarts_a_server_on_its_own_files(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_restart="""
        import redis

        def test_restart(sluice_server_factory):
            first = sluice_server_factory(appendonly="yes")
            redis.Redis.from_url(first.url).set("survives", "yes")
            first.stop()
            second = sluice_server_factory(appendonly="yes", dir=first.dir)
            assert redis.Redis.from_url(second.url).get("survives") == b"yes"
    """)
    run(pytester).assert_outcomes(passed=1)


def test_nothing_starts_or_loads_unless_a_fixture_is_used(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain="""
        import sys
        import threading

        def test_plain(request):
            assert request.config.pluginmanager.hasplugin("sluice") or \\
                request.config.pluginmanager.hasplugin("sluice.testing.pytest_plugin")
            assert not [t for t in threading.enumerate() if t.name.startswith("sluice")]
            assert "sluice.server.app" not in sys.modules
    """)
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider", *plugin_args())
    result.assert_outcomes(passed=1)


def test_a_bad_setting_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makeini("""
        [pytest]
        sluice_persistence = sometimes
    """)
    pytester.makepyfile(test_bad="""
        def test_uses_it(redis_client):
            pass
    """)
    result = run(pytester)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*sluice_persistence must be one of none, rdb, aof*"])


def test_our_own_fixtures_are_not_shadowed(request: pytest.FixtureRequest) -> None:
    """In this repository's runs the plugin is loaded too (when the package is installed);
    tests/conftest.py's fixtures keep their names and the plugin's add theirs."""
    from tests.support import ThreadedServer

    assert isinstance(request.getfixturevalue("sluice"), ThreadedServer)
    manager = request._fixturemanager  # noqa: SLF001 - where pytest keeps fixture definitions
    for name in ("sluice_server", "sluice_url", "redis_client", "async_redis_client"):
        defs = manager.getfixturedefs(name, request.node) or ()
        assert all(d.func.__module__ == "sluice.testing.pytest_plugin" for d in defs), name
