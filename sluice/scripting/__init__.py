"""Lua scripting (EVAL, functions) on Lua 5.1 through lupa: see docs/scripting.md.

Imports ``sluice.protocol`` only; the server implements ``engine.ScriptHost``.
"""
