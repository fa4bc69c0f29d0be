"""Command-line directives and file paths as redis-server 8.6.3 takes them (each case run on
it): words before any ``--name`` start the first directive, proc-title-template is checked by
expanding it (Redis's ``validateProcTitleTemplate``), and relative file settings are taken
from ``dir``, where redis-server has chdir()ed."""

from __future__ import annotations

import pytest

from sluice.server.config import Config, ConfigError
from sluice.server.config_redis import expand_title


def _argv(*args: str) -> Config:
    config = Config()
    config.load_argv(list(args))
    return config


def test_words_before_any_option_start_the_first_directive() -> None:
    config = _argv("loglevel", "verbose", "--maxmemory '700mb'", "--maxmemory-policy 'volatile-lru'")
    assert (config.loglevel, config.maxmemory) == ("verbose", 734003200)
    assert config.maxmemory_policy == "volatile-lru"


def test_a_leading_dash_word_is_still_refused() -> None:
    with pytest.raises(ConfigError, match="Invalid argument '-x'"):
        _argv("-x")


@pytest.mark.parametrize("args", [
    ("--proc-title-template", "--my--title--template", "--loglevel", "verbose"),
    ("--proc-title-template --my--title--template", "--loglevel verbose"),
])
def test_a_value_may_start_with_two_dashes(args: tuple[str, ...]) -> None:
    config = _argv(*args)
    assert (config.proc_title_template, config.loglevel) == ("--my--title--template", "verbose")


@pytest.mark.parametrize("template, valid", [
    ("--x", True), ("{{x", True), ("{title}x", True), ("{title} {listen-addr}", True),
    ("{title}", False), (" {title} ", False), ("{server-mode}", False), ("x {", False),
    ("{invalid-var}", False), ("{title", False), ("", False),
])
def test_proc_title_template_validation(template: str, valid: bool) -> None:
    config = Config()
    if valid:
        config.set_many([(b"proc-title-template", [template.encode()])])
        assert config.proc_title_template == template
    else:
        with pytest.raises(ConfigError, match="template format is invalid"):
            config.set_many([(b"proc-title-template", [template.encode()])])


def test_expand_title() -> None:
    values = {"title": "redis-server", "port": "6379"}
    assert expand_title(" {{{title}} :{port} ", values) == "{redis-server} :6379"
    assert expand_title("{tls-port}", values) is None


def test_relative_file_settings_are_taken_from_dir() -> None:
    config = _argv("--dir", "/var/lib/sluice", "--aclfile", "users.acl")
    assert config.in_dir(config.aclfile) == "/var/lib/sluice/users.acl"
    assert config.in_dir("/etc/users.acl") == "/etc/users.acl"
