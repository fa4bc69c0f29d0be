"""The Lua chunk that locks a fresh runtime down as Redis's scripting environment.

Redis patches Lua 5.1 with read-only tables (``lua_enablereadonlytable``); lupa ships plain
Lua 5.1.5, so the same guarantees are built from metatables and a few wrapped builtins (see
docs/scripting.md, "The sandbox"). The chunk runs once, first, with a table of Python
callables; it keeps every raw builtin it needs in locals (after it returns, the global table
is empty and locked, so code here must never read a global once ``lock()`` has run) and
returns the privileged entry points the engine uses (``run``, ``compile``, ``shape`` ...).

Invariants:
- scripts never see a Python object: each Python callable is wrapped in a Lua closure;
- every table a script can reach from the globals is a read-only proxy (writes, ``rawset``,
  ``setmetatable``, ``table.insert/remove/sort`` fail with "Attempt to modify a readonly
  table"), and so are the metatables ``getmetatable`` hands out;
- reading a missing global raises "Script attempted to access nonexistent global variable";
- the errors a script sees have Redis's wording and positions (``luaL_error`` from a library
  gets the caller's ``user_script:N:``, a ``redis.*`` error table gets none).

Mirrors ``script_lua.c`` (``luaRegisterRedisAPI``, the allow lists, the error handler) and
``function_lua.c`` (``luaEngineInitEngine``: the load-time API).
"""

from __future__ import annotations

SANDBOX = r"""
local py, kind = ...
local SG = {}          -- the globals scripts run with (their env); _G stays lupa's
local rawset, rawget, rawequal, setmetatable, getmetatable, type, error, pairs, next,
      ipairs, select, tostring, tonumber, pcall, xpcall, unpack, loadstring, setfenv,
      assert, collectgarbage, gcinfo, newproxy, getfenv =
      rawset, rawget, rawequal, setmetatable, getmetatable, type, error, pairs, next,
      ipairs, select, tostring, tonumber, pcall, xpcall, unpack, loadstring, setfenv,
      assert, collectgarbage, gcinfo, newproxy, getfenv
local string, table, math, coroutine = string, table, math, coroutine
local os_clock = os.clock
local dgetinfo, dsethook, dgetmetatable = debug.getinfo, debug.sethook, debug.getmetatable
local floor, sfmt, sbyte, ssub, sfind = math.floor, string.format, string.byte, string.sub,
      string.find
local tinsert, tremove, tsort, tconcat = table.insert, table.remove, table.sort, table.concat
local sdump = string.dump

-- Scripts' tail calls made plain calls (bytecode.py says why: redis.call is a Lua function,
-- and `return redis.call(...)` must keep the script's frame, whose line errors report).
local no_tailcalls = py.no_tailcalls
local function plain_calls(f)
  local chunk = no_tailcalls(sdump(f))
  if chunk == nil then return f end
  return loadstring(chunk) or f
end

local RO = "Attempt to modify a readonly table"
local INTERNAL = "=sluice"

-- proxy -> the table it stands for; proxy -> what getmetatable(proxy) answers
local real = setmetatable({}, {__mode = "k"})
local mview = setmetatable({}, {__mode = "k"})

local function ro_newindex() error(RO, 2) end

local protect
-- A read-only stand-in for t: reads fall through, writes fail. Child tables are protected
-- too (a copy of t holds their proxies), so nothing reachable from it can be edited.
protect = function(t, seen)
  seen = seen or {}
  if real[t] then return t end
  if seen[t] then return seen[t] end
  local copy = {}
  local p = {}
  seen[t] = p
  for k, v in next, t do
    if type(v) == "table" then v = protect(v, seen) end
    copy[k] = v
  end
  local mt = {__index = copy, __newindex = ro_newindex, __metatable = false}
  setmetatable(p, mt)
  real[p] = copy
  return p
end

local function is_protected(t) return real[t] ~= nil end

local function err_at(msg, level)
  error(msg, level)
end

local S = {}           -- the globals scripts may read (what __index of _G resolves to)
local missing = function(_, k)
  error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
end

-- ---------------------------------------------------------------------------------------
-- Builtins that must not see past a proxy or write into a protected table.

local function s_rawset(t, k, v)
  if real[t] or rawequal(t, SG) then error(RO, 0) end
  return rawset(t, k, v)
end
local function s_rawget(t, k)
  local r = real[t]
  if r then return rawget(r, k) end
  if rawequal(t, SG) then return rawget(S, k) end
  return rawget(t, k)
end
local function s_setmetatable(t, m)
  if real[t] or rawequal(t, SG) then error(RO, 0) end
  return setmetatable(t, m)
end
local function s_getmetatable(o)
  if real[o] then return mview[o] end
  return getmetatable(o)
end
local function s_next(t, k)
  local r = real[t]
  if r then return next(r, k) end
  if rawequal(t, SG) then return next(S, k) end
  return next(t, k)
end
local function s_pairs(t)
  if real[t] or rawequal(t, SG) then return s_next, t, nil end
  return pairs(t)
end
local function s_ipairs(t)
  local r = real[t]
  if r then return ipairs(r) end
  return ipairs(t)
end
local unpack_long
unpack_long = function(t, i, j)
  if i > j then return end
  return rawget(t, i), unpack_long(t, i + 1, j)
end
-- unpack: Lua 5.1.5's computes the count in a C int, so a huge range overflows it and
-- crashes the process; Redis's copy checks it. So do we, before calling the real one.
local function s_unpack(t, i, j)
  if type(t) ~= "table" then
    error("bad argument #1 to 'unpack' (table expected, got " ..
          (t == nil and "no value" or type(t)) .. ")", 2)
  end
  local r = real[t] or t
  i = i == nil and 1 or tonumber(i)
  j = j == nil and #r or tonumber(j)
  if i == nil or j == nil then error("bad argument to 'unpack' (number expected)", 2) end
  i, j = floor(i), floor(j)
  if i > j then return end
  local n = j - i + 1
  if n >= 2147483647 or n > 7999 then error("too many results to unpack", 2) end
  if n > 7000 then return unpack_long(r, i, j) end  -- past what unpack's C frame can hold
  return unpack(r, i, j)
end
local function guard_table(fn)
  return function(t, ...)
    if real[t] or rawequal(t, SG) then error(RO, 0) end
    return fn(t, ...)
  end
end

-- loadstring / load: text only. Redis's Lua parses everything as text, so a binary chunk
-- fails to compile (and loadstring(string.dump(f))() is "attempt to call a nil value").
local function chunkid(s, name)
  if name then
    local c = ssub(name, 1, 1)
    if c == "=" or c == "@" then return ssub(name, 2) end
    s = name
  end
  local first = s:match("^[^\n\r]*")
  if #first < #s or #first > 45 then first = ssub(first, 1, 45) .. "..." end
  return '[string "' .. first .. '"]'
end
local function s_loadstring(s, name)
  if type(s) == "string" and sbyte(s, 1) == 27 then
    return nil, chunkid(s, name) .. ":1: unexpected symbol near 'char(27)'"
  end
  local f, err = loadstring(s, name)
  if f then
    f = plain_calls(f)
    setfenv(f, SG)
  end
  return f, err
end
local function s_load(reader, name)
  local parts, n = {}, 0
  while true do
    local piece = reader()
    if piece == nil or piece == "" then break end
    if type(piece) ~= "string" then return nil, "reader function must return a string" end
    n = n + 1
    parts[n] = piece
  end
  return s_loadstring(tconcat(parts), name or "=(load)")
end

-- ---------------------------------------------------------------------------------------
-- math.random as Redis's: its redisLrand48 generator, not libc's.

local lrand48 = py.lrand48
local LRAND48_MAX = 2147483647
local function checkint(n, v, fname)
  local x = tonumber(v)
  if x == nil then
    local got = v == nil and "no value" or type(v)
    error(sfmt("bad argument #%d to '%s' (number expected, got %s)", n, fname, got), 3)
  end
  return x >= 0 and floor(x) or -floor(-x)
end
local function s_random(...)
  local r = (lrand48() % LRAND48_MAX) / LRAND48_MAX
  local argc = select("#", ...)
  if argc == 0 then return r end
  if argc == 1 then
    local u = checkint(1, (...), "random")
    if u < 1 then error("bad argument #1 to 'random' (interval is empty)", 2) end
    return floor(r * u) + 1
  end
  if argc == 2 then
    local l, u = checkint(1, (...), "random"), checkint(2, select(2, ...), "random")
    if l > u then error("bad argument #2 to 'random' (interval is empty)", 2) end
    return floor(r * (u - l + 1)) + l
  end
  error("wrong number of arguments", 2)
end
local function s_randomseed(seed)
  py.srand48(checkint(1, seed, "randomseed"))
end

-- ---------------------------------------------------------------------------------------
-- The redis table.

-- redis.call and the library functions are the Python callables themselves: a call to them
-- is a C call, so a script's `return redis.call(...)` keeps its frame (a Lua wrapper would be
-- tail-called and the error's line lost). They raise Python exceptions, which reach Lua as
-- userdata; `unwrap` turns those back into Redis's error values wherever a script or the
-- error handler could see them.
local unwrap = py.unwrap
local function lua_error_value(e)
  if type(e) == "userdata" then return unwrap(e) end
  return e
end

local err_table = py.err_table
local function error_reply(...)
  if select("#", ...) ~= 1 or type((...)) ~= "string" then
    return err_table("wrong number or type of arguments")
  end
  local e = ...
  if ssub(e, 1, 1) ~= "-" then e = "-" .. e end
  return err_table(e)
end
local function status_reply(...)
  if select("#", ...) ~= 1 or type((...)) ~= "string" then
    return err_table("wrong number or type of arguments")
  end
  return {ok = (...)}
end
local null = newproxy(false)

-- redis.call / redis.pcall: lupa's bridge takes at most ~7,997 values in one call (its
-- check for two free slots of a C function's stack, LUAI_MAXCSTACK = 8,000); Redis's takes
-- 8,001 and more. Past MANY arguments they go to Python packed in one table.
local pycall, pypcall, call_packed, pcall_packed =
      py.call, py.pcall, py.call_packed, py.pcall_packed
local MANY = 4096
local function redis_call(...)
  if select("#", ...) < MANY then return pycall(...) end
  return call_packed({n = select("#", ...), ...})
end
local function redis_pcall(...)
  if select("#", ...) < MANY then return pypcall(...) end
  return pcall_packed({n = select("#", ...), ...})
end

-- ---------------------------------------------------------------------------------------
-- The Lua debugger (ldb.py): a session's line hook, and what it does with the script's
-- stack. Python keeps the session (the log, breakpoints, the client's socket) and says what
-- to do next; print, trace, eval and redis need Lua. Only frames of the script itself
-- (user_script) are looked at, as Redis has no other Lua frames above a script.

local ldb_line, ldb_cmd, ldb_log, ldb_send, ldb_quote, ldb_force, ldb_on, ldb_source,
      ldb_resumed, ldb_debug_line, ldb_bp =
      py.ldb_line, py.ldb_cmd, py.ldb_log, py.ldb_send, py.ldb_quote, py.ldb_force,
      py.ldb_on, py.ldb_source, py.ldb_resumed, py.ldb_debug_line, py.ldb_breakpoint
local dgetlocal, smatch = debug.getlocal, string.match
local USER = "user_script"

-- ldbCatStackValue: strings quoted, numbers as %g, tables as {a; b} or {[k]=v; ...}.
local ldb_repr
ldb_repr = function(v, level)
  if level == 10 then return "<max recursion level reached! Nested table?>" end
  level = level + 1
  local t = type(v)
  if t == "string" then return ldb_quote(v)
  elseif t == "boolean" then return v and "true" or "false"
  elseif t == "number" then return sfmt("%g", v)
  elseif t == "nil" then return "nil"
  elseif t == "table" then
    local expected, is_array, r1, r2 = 1, true, {}, {}
    local k, x = next(v)
    while k ~= nil do
      if is_array and (type(k) ~= "number" or k ~= expected) then is_array = false end
      r1[#r1 + 1] = ldb_repr(x, level)
      r2[#r2 + 1] = "[" .. ldb_repr(k, level) .. "]=" .. ldb_repr(x, level)
      expected = expected + 1
      k, x = next(v, k)
    end
    return "{" .. tconcat(is_array and r1 or r2, "; ") .. "}"
  end
  return '"' .. t .. "@" .. (smatch(tostring(v), "0x%x+") or "?") .. '"'
end

-- From the hook's helpers (level 1), the hook is level 2 and the stopped script level 3.
local function ldb_print(name)
  local level = 3
  while true do
    local info = dgetinfo(level, "S")
    if not info then break end
    if sfind(info.short_src, USER, 1, true) then
      local i = 1
      while true do
        local n, x = dgetlocal(level, i)
        if n == nil then break end
        if n == name then ldb_log("<value> " .. ldb_repr(x, 0), true); return end
        i = i + 1
      end
    end
    level = level + 1
  end
  if name == "ARGV" or name == "KEYS" then
    ldb_log("<value> " .. ldb_repr(rawget(S, name), 0), true)
  else
    ldb_log("No such variable.")
  end
end

local function ldb_print_all()
  local vars, i = 0, 1
  while true do
    local n, x = dgetlocal(3, i)
    if n == nil then break end
    if not sfind(n, "(*temporary)", 1, true) then
      ldb_log("<value> " .. n .. " = " .. ldb_repr(x, 0), true)
      vars = vars + 1
    end
    i = i + 1
  end
  if vars == 0 then ldb_log("No local variables in the current context.") end
end

local function ldb_trace()
  local level = 3
  while true do
    local info = dgetinfo(level, "Snl")
    if not info then break end
    if sfind(info.short_src, USER, 1, true) then
      ldb_log((level == 3 and "In " or "From ") .. (info.name or "top level") .. ":")
      ldb_source(info.currentline)
    end
    level = level + 1
  end
end

local function ldb_eval(code)
  local f, err = loadstring("return " .. code, "@ldb_eval")
  if not f then
    f, err = loadstring(code, "@ldb_eval")
    if not f then ldb_log("<error> " .. tostring(err)); return end
  end
  setfenv(f, SG)
  local ok, r = pcall(f)
  if not ok then
    local t = type(r)
    ldb_log("<error> " .. ((t == "string" or t == "number") and r
                           or "(error object is not a string)"))
    return
  end
  ldb_log("<retval> " .. ldb_repr(r, 0), true)
end

local function ldb_redis(...)
  ldb_force(true)   -- the call and its reply are logged, as when stepping
  pcall(redis_call, ...)
  ldb_force(false)
end

-- luaLdbLineHook: a line of the script, or 100,000 instructions (the busy timeout).
local function ldb_hook(ev)
  local info = dgetinfo(2, "Sl")
  if not info or not sfind(info.short_src, USER, 1, true) then return end
  if not ldb_line(info.currentline, ev == "count") then return end
  while true do
    local todo = {ldb_cmd()}
    local action = todo[1]
    if action == "go" then break end
    if action == "error" then error(todo[2]) end
    if action == "print" then
      if todo[2] ~= nil then ldb_print(todo[2]) else ldb_print_all() end
    elseif action == "trace" then ldb_trace()
    elseif action == "eval" then ldb_eval(todo[2])
    elseif action == "redis" then ldb_redis(unpack(todo, 2))
    end
    ldb_send()
  end
  ldb_resumed()
end

-- redis.debug(): the values, comma separated, in the session's log.
local function ldb_debug(...)
  if not ldb_on() then return end
  local parts = {}
  for j = 1, select("#", ...) do parts[j] = ldb_repr((select(j, ...)), 0) end
  ldb_debug_line(tconcat(parts, ", "))
end

local redis = {
  call = redis_call,
  pcall = redis_pcall,
  log = py.log,
  LOG_DEBUG = 0, LOG_VERBOSE = 1, LOG_NOTICE = 2, LOG_WARNING = 3,
  REDIS_VERSION = py.version, REDIS_VERSION_NUM = py.version_num,
  setresp = py.setresp,
  sha1hex = py.sha1hex,
  error_reply = error_reply,
  status_reply = status_reply,
  set_repl = py.set_repl,
  REPL_NONE = 0, REPL_AOF = 1, REPL_SLAVE = 2, REPL_REPLICA = 2, REPL_ALL = 3,
  replicate_commands = function() return true end,
  acl_check_cmd = py.acl_check_cmd,
  breakpoint = function() return ldb_bp() end,
  debug = ldb_debug,
}
if kind == "function" then
  redis.breakpoint = nil
  redis.debug = nil
  redis.replicate_commands = nil
end

-- cjson, cmsgpack, struct, bit: Python underneath, Lua closures on top.
local cjson = {
  encode = py.cjson_encode,
  decode = py.cjson_decode,
  encode_keep_buffer = py.cjson_encode_keep_buffer,
  encode_max_depth = py.cjson_encode_max_depth,
  decode_max_depth = py.cjson_decode_max_depth,
  encode_number_precision = py.cjson_encode_number_precision,
  encode_sparse_array = py.cjson_encode_sparse_array,
  encode_invalid_numbers = py.cjson_encode_invalid_numbers,
  decode_invalid_numbers = py.cjson_decode_invalid_numbers,
  decode_array_with_array_mt = py.cjson_decode_array_with_array_mt,
  null = null,
  _NAME = "cjson", _VERSION = "2.1.0",
}
local cmsgpack = {
  pack = py.msgpack_pack,
  unpack = py.msgpack_unpack,
  unpack_one = py.msgpack_unpack_one,
  unpack_limit = py.msgpack_unpack_limit,
  _NAME = "cmsgpack", _VERSION = "lua-cmsgpack 0.4.0",
  _COPYRIGHT = "Copyright (C) 2012, Salvatore Sanfilippo",
  _DESCRIPTION = "MessagePack C implementation for Lua",
}
local struct = {
  pack = py.struct_pack,
  unpack = py.struct_unpack,
  size = py.struct_size,
}
local bit = {}
for _, name in ipairs({"tobit", "tohex", "bnot", "band", "bor", "bxor", "lshift", "rshift",
                       "arshift", "rol", "ror", "bswap"}) do
  bit[name] = py["bit_" .. name]
end

-- ---------------------------------------------------------------------------------------
-- The error handler (Redis's __redis__err__handler): any error becomes {err=, source=,
-- line=} taken from the first frame that is user code (ours count as C functions).

local function errh(e)
  local level = 2
  local i = dgetinfo(level, "nSl")
  while i and (i.what == "C" or i.source == INTERNAL) and level < 6 do
    level = level + 1
    i = dgetinfo(level, "nSl")
  end
  if type(e) == "userdata" then
    local lib
    e, lib = unwrap(e)
    if lib and i and i.currentline > 0 then
      e = ssub(i.source, 2) .. ":" .. i.currentline .. ": " .. e
    end
  end
  if type(e) ~= "table" then
    e = {err = "ERR " .. tostring(e)}
  end
  if i then
    rawset(e, "source", i.source)
    rawset(e, "line", i.currentline)
  end
  return e
end

-- redis.pcall is not pcall: Redis's pcall returns the err string of an error table.
local function pack(...) return {n = select("#", ...), ...} end
local function s_pcall(f, ...)
  local r = pack(pcall(f, ...))
  if not r[1] then
    local e = lua_error_value(r[2])
    if type(e) == "table" then
      local s = e.err
      if type(s) == "string" then e = s end
    end
    return false, e
  end
  return unpack(r, 1, r.n)
end
local function s_xpcall(f, h)
  return xpcall(f, function(e) return h(lua_error_value(e)) end)
end

-- ---------------------------------------------------------------------------------------
-- The globals scripts see (Redis's allow lists).

local os_t = {clock = os_clock}
local string_t = {}
for k, v in next, string do string_t[k] = v end
local table_t = {}
for k, v in next, table do table_t[k] = v end
table_t.insert = guard_table(tinsert)
table_t.remove = guard_table(tremove)
table_t.sort = guard_table(tsort)
local math_t = {}
for k, v in next, math do math_t[k] = v end
math_t.random = s_random
math_t.randomseed = s_randomseed
local coroutine_t = {}
for k, v in next, coroutine do coroutine_t[k] = v end
local cresume = coroutine.resume
coroutine_t.resume = function(co, ...)
  local r = pack(cresume(co, ...))
  if not r[1] then return false, lua_error_value(r[2]) end
  return unpack(r, 1, r.n)
end

-- Python callables are userdata to Lua: type() calls them functions, as Redis's C ones are.
local pyfn = setmetatable({}, {__mode = "k"})
local function mark(t)
  for _, v in next, t do
    if type(v) == "userdata" and not rawequal(v, null) then pyfn[v] = true end
  end
end
mark(redis); mark(cjson); mark(cmsgpack); mark(struct); mark(bit)
local function s_type(v)
  local t = type(v)
  if t == "userdata" and pyfn[v] then return "function" end
  return t
end

local allowed = {
  string = string_t, table = table_t, math = math_t, os = os_t, coroutine = coroutine_t,
  cjson = cjson, bit = bit, struct = struct, cmsgpack = cmsgpack, redis = redis,
  xpcall = s_xpcall, tostring = tostring, setmetatable = s_setmetatable, next = s_next,
  assert = assert, tonumber = tonumber, rawequal = rawequal, collectgarbage = collectgarbage,
  getmetatable = s_getmetatable, rawset = s_rawset, pcall = s_pcall, type = s_type,
  select = select, unpack = s_unpack, gcinfo = gcinfo, pairs = s_pairs, rawget = s_rawget,
  loadstring = s_loadstring, ipairs = s_ipairs, _VERSION = "Lua 5.1", load = s_load,
  error = error,
}
if py.deprecated_api then
  allowed.setfenv = setfenv
  allowed.getfenv = getfenv
  allowed.newproxy = newproxy
end
local p_allowed = {}
for k, v in next, allowed do
  if type(v) == "table" then v = protect(v) end
  p_allowed[k] = v
end
-- cjson.null is a value, not a table; the protected cjson copy keeps it.
for k, v in next, p_allowed do S[k] = v end
setmetatable(S, {__index = missing})

-- The load-time API of function libraries (function_lua.c: only register_function, log and
-- the version fields; anything else is a missing global).
local L = {}
if kind == "function" then
  local lredis = {
    register_function = py.register_function,
    log = redis.log,
    LOG_DEBUG = 0, LOG_VERBOSE = 1, LOG_NOTICE = 2, LOG_WARNING = 3,
    REDIS_VERSION = py.version, REDIS_VERSION_NUM = py.version_num,
  }
  mark(lredis)
  setmetatable(lredis, {__index = missing})
  local lp = {}
  setmetatable(lp, {__index = lredis, __newindex = ro_newindex, __metatable = false})
  real[lp] = lredis
  L.redis = lp
  setmetatable(L, {__index = missing})
end

-- The scripts' globals: empty, reads through S, writes refused. getmetatable(_G) answers a
-- read-only view of this metatable. lupa's own globals (the thread's) stay as they are: lupa
-- reads some of them (debug.traceback), and no script can reach them.
local gmt = {__index = S, __newindex = ro_newindex}
local gview = {}
setmetatable(gview, {__index = gmt, __newindex = ro_newindex, __metatable = false})
real[gview] = gmt
gmt.__metatable = gview
rawset(S, "_G", SG)

-- The string metatable: getmetatable("") answers a read-only view.
local smt = dgetmetatable("")
local sview = {}
setmetatable(sview, {__index = smt, __newindex = ro_newindex, __metatable = false})
real[sview] = smt
smt.__metatable = sview

local function lock()
  setmetatable(SG, gmt)
end

-- ---------------------------------------------------------------------------------------
-- Entry points for the engine (never reachable from scripts).

local hookfn = py.hook
local hook
-- The count hook stays set between runs (setting it costs a C call per run; no Lua code runs
-- between scripts but ours, for which the Python side answers "go on"). A kill switches it to
-- every line; the next run puts it back.
local counting = false
hook = function()
  local verdict = hookfn()
  if verdict then
    -- Not in our own code: a line event in the runner after xpcall returns must not raise
    -- outside the protected call.
    local i = dgetinfo(2, "S")
    if i and i.source == INTERNAL then return end
    counting = false
    dsethook(hook, "l")        -- fire on every line: pcall cannot swallow the kill
    error(verdict)
  end
end

local E = {}

function E.compile(body, chunkname)
  local f, err = loadstring(body, chunkname)
  if f then
    f = plain_calls(f)
    setfenv(f, SG)
  end
  return f, err
end

-- KEYS and ARGV from the arguments: the first nkeys are keys.
local function set_args(nkeys, ...)
  local keys, argv = {...}, {}
  for i = nkeys + 1, select("#", ...) do
    argv[i - nkeys] = keys[i]
    keys[i] = nil
  end
  return keys, argv
end

function E.run_eval(f, nkeys, ...)
  local keys, argv = set_args(nkeys, ...)
  rawset(S, "KEYS", keys)
  rawset(S, "ARGV", argv)
  if not counting then dsethook(hook, "", 100000); counting = true end
  local ok, r = xpcall(f, errh)  -- the first value only, as Redis reads one
  return ok, r
end

-- EVAL in a debugging session: the debugger's hook instead of the count hook.
function E.run_eval_debug(f, nkeys, ...)
  local keys, argv = set_args(nkeys, ...)
  rawset(S, "KEYS", keys)
  rawset(S, "ARGV", argv)
  counting = false  -- the next plain run puts the count hook back
  dsethook(ldb_hook, "l", 100000)
  local ok, r = xpcall(f, errh)
  dsethook()
  return ok, r
end

function E.run_function(f, nkeys, ...)
  local keys, argv = set_args(nkeys, ...)
  if not counting then dsethook(hook, "", 100000); counting = true end
  local ok, r = xpcall(function() return f(keys, argv) end, errh)
  return ok, r
end

-- FUNCTION LOAD: run the library body against the load-time globals, with the load hook.
function E.load_library(body)
  local f, err = loadstring(body, "@user_function")
  if not f then return false, "compile", err end
  f = plain_calls(f)
  setfenv(f, SG)
  gmt.__index = L
  if not counting then dsethook(hook, "", 100000); counting = true end
  local ok, r = xpcall(f, errh)
  gmt.__index = S
  if not ok then return false, "run", r end
  return true
end

-- What a script returned, for luaReplyToRedisReply: the shape of a table, read raw.
function E.shape(v)
  local e = rawget(v, "err")
  if type(e) == "string" then
    return "err", e, rawget(v, "source"), rawget(v, "line"),
           rawget(v, "ignore_error_stats_update")
  end
  local s = rawget(v, "ok")
  if type(s) == "string" then return "ok", s end
  local d = rawget(v, "double")
  if type(d) == "number" then return "double", d end
  local b = rawget(v, "big_number")
  if type(b) == "string" then return "big_number", b end
  local vs = rawget(v, "verbatim_string")
  if type(vs) == "table" then
    local f, str = rawget(vs, "format"), rawget(vs, "string")
    if type(f) == "string" and type(str) == "string" then return "verbatim", f, str end
  end
  local m = rawget(v, "map")
  if type(m) == "table" then
    local ks, xs, n = {}, {}, 0
    for k, x in next, m do n = n + 1; ks[n] = k; xs[n] = x end
    return "map", ks, xs, n
  end
  local st = rawget(v, "set")
  if type(st) == "table" then
    local ks, n = {}, 0
    for k in next, st do n = n + 1; ks[n] = k end
    return "set", ks, n
  end
  local arr, n = {}, 0
  while true do
    local x = rawget(v, n + 1)
    if x == nil then break end
    n = n + 1
    arr[n] = x
  end
  return "array", arr, n
end

-- An error object that is not {err=...}: where it was raised (the handler added those).
function E.errinfo(t)
  return rawget(t, "source"), rawget(t, "line")
end

-- A table's raw contents as two arrays (the libraries read tables without metamethods).
function E.items(t)
  local ks, vs, n = {}, {}, 0
  for k, v in next, t do n = n + 1; ks[n] = k; vs[n] = v end
  return ks, vs, n
end

function E.rawlen(t)
  local n = 0
  while rawget(t, n + 1) ~= nil do n = n + 1 end
  return n
end

function E.tag(t, kind)
  -- {err=...} tables made by Python helpers, marked so stats are not counted twice
  return t
end

E.protect = protect
E.null = null
E.is_null = function(v) return rawequal(v, null) end
E.array_mt_view = function(mt)
  local v = {}
  setmetatable(v, {__index = mt, __newindex = ro_newindex, __metatable = false})
  real[v] = mt
  mt.__metatable = v
  return mt
end
E.setmetatable = setmetatable
E.getmetatable = dgetmetatable
E.lock = lock
return E
"""
