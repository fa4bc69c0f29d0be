"""``commands.context``: the typed door between handlers and the server.

mypy checks that ``Client`` and ``Server`` match the protocols member for member; what it
cannot see is ``Config``, whose values are attributes set from the ``PARAMS`` table. These
tests hold ``Settings`` (what handlers read of the configuration) to that table.
"""

from __future__ import annotations

import typing
from types import UnionType

import pytest

from sluice.commands import context
from sluice.commands.context import Settings
from sluice.server.config import Config

_VALUES = sorted(name for name, member in vars(Settings).items() if isinstance(member, property))
_NOT_PARAMS = {"config_file"}  # Config's own state, not a directive


def _types(hint: object) -> tuple[type, ...]:
    if isinstance(hint, UnionType):
        return tuple(type(None) if t is None else t for t in typing.get_args(hint))
    assert isinstance(hint, type)
    return (hint,)


@pytest.mark.parametrize("name", _VALUES)
def test_every_setting_handlers_read_is_configured_with_its_type(name: str) -> None:
    config = Config()
    hint = typing.get_type_hints(getattr(Settings, name).fget, vars(context))["return"]
    value = getattr(config, name)  # AttributeError: no such setting
    if name not in _NOT_PARAMS:
        param = config.param(name.replace("_", "-"))
        assert param is not None and param.attr == name, f"{name} is not a config parameter"
    allowed = _types(hint)
    assert isinstance(value, allowed), f"{name} = {value!r}: Settings says {hint}"
    if bool not in allowed:  # bool is an int: an int setting must not default to True/False
        assert not isinstance(value, bool), f"{name} = {value!r}: Settings says {hint}"


def test_settings_lists_something() -> None:
    # The parametrization above is empty if the protocol's members stop being properties.
    assert "stream_node_max_entries" in _VALUES and len(_VALUES) >= 10


def test_a_wrong_type_is_caught() -> None:
    # The check itself can fail: hz is an int, not a str.
    assert not isinstance(Config().hz, _types(str))
