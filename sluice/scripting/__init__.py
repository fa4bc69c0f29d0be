"""Lua scripting (EVAL, functions) on Lua 5.1 through lupa: see docs/scripting.md.

A layer between the server and the commands: imports ``commands.context`` (the ``Context``
and ``ServerFacade`` protocols), ``commands.errors``, ``commands.spec``, ``protocol`` and
``storage``, never ``sluice.server`` (import-linter's "scripting" contract). The server builds
``runner.Scripting`` and gives it a ``runner.ScriptServer``; handlers reach it through the
``commands.context.Scripting`` protocol.
"""
