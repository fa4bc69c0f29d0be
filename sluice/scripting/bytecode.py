"""Scripts' tail calls made plain calls, in a Lua 5.1 binary chunk (``string.dump``'s format).

Why: ``redis.call`` and ``redis.pcall`` are a small Lua function of the sandbox, which packs
its arguments into one table when there are very many of them (lupa's bridge cannot take
more than about 7,997 values at once: it checks for two free slots of a C function's stack,
which holds at most ``LUAI_MAXCSTACK`` = 8,000, while Redis's ``redis.call`` is a C function
of its own and takes 8,001; unit/scripting's "Script check unpack with massive arguments").
A Lua function called as ``return redis.call(...)`` would be a tail call, which replaces the
script's frame: an error would then lose the script's line, which Redis reports
(``... script: <sha>, on @user_script:1.``). So a script's ``OP_TAILCALL`` instructions are
turned back into the ``OP_CALL`` the compiler first emitted (same A, B and C = 0: all
results), followed by the ``OP_RETURN A 0`` it already emits after every tail call: the
same results, the script's frame kept. What differs from Redis is only the depth of a chain
of tail calls, which now counts against Lua's 20,000 nested calls.

The walk follows Lua 5.1's ``lundump.c``: the header (checked against the sizes this runtime
writes: anything else is left untouched), then per function the source, line range, counts,
code (rewritten in place), constants, nested functions and debug information.

Pure code: bytes in, bytes out.
"""

from __future__ import annotations

import struct

_HEADER = b"\x1bLua\x51\x00"
OP_CALL, OP_TAILCALL = 28, 29
_OPCODE_MASK = 0x3F  # the opcode is an instruction's low 6 bits


class _Chunk:
    __slots__ = ("data", "pos", "int_fmt", "size_t_fmt", "number_size")

    def __init__(self, data: bytearray) -> None:
        self.data = data
        self.pos = 12
        little = data[6] == 1
        end = "<" if little else ">"
        self.int_fmt = struct.Struct(end + {4: "i", 8: "q"}[data[7]])
        self.size_t_fmt = struct.Struct(end + {4: "I", 8: "Q"}[data[8]])
        self.number_size = data[10]

    def read_int(self) -> int:
        (n,) = self.int_fmt.unpack_from(self.data, self.pos)
        self.pos += self.int_fmt.size
        return int(n)

    def skip_string(self) -> None:
        (n,) = self.size_t_fmt.unpack_from(self.data, self.pos)
        self.pos += self.size_t_fmt.size + int(n)

    def function(self) -> int:
        """Rewrite one function and those nested in it; returns the tail calls changed."""
        self.skip_string()  # source
        self.pos += 2 * self.int_fmt.size + 4  # line range; upvalues, params, vararg, stack
        changed = 0
        data = self.data
        for _ in range(self.read_int()):  # code: 4-byte instructions (checked in the header)
            at = self.pos + (0 if data[6] == 1 else 3)  # the byte holding the opcode
            if data[at] & _OPCODE_MASK == OP_TAILCALL:
                data[at] = (data[at] & ~_OPCODE_MASK & 0xFF) | OP_CALL
                changed += 1
            self.pos += 4
        for _ in range(self.read_int()):  # constants
            kind = data[self.pos]
            self.pos += 1
            if kind == 1:  # boolean
                self.pos += 1
            elif kind == 3:  # number
                self.pos += self.number_size
            elif kind == 4:  # string
                self.skip_string()
            elif kind != 0:  # nil has no payload
                raise ValueError(f"constant of type {kind}")
        for _ in range(self.read_int()):  # nested functions
            changed += self.function()
        lines = self.read_int()  # line info (read first: ``pos +=`` would read pos before it)
        self.pos += lines * self.int_fmt.size
        for _ in range(self.read_int()):  # local variables: name, start pc, end pc
            self.skip_string()
            self.pos += 2 * self.int_fmt.size
        for _ in range(self.read_int()):  # upvalue names
            self.skip_string()
        return changed


def without_tail_calls(chunk: bytes) -> bytes | None:
    """``chunk`` with every tail call made a plain call; None when it has none, or when it is
    not a Lua 5.1 chunk this module can read (the caller keeps its function then)."""
    data = bytearray(chunk)
    if data[:6] != _HEADER or len(data) < 12 or data[9] != 4 or data[7] not in (4, 8) \
            or data[8] not in (4, 8):
        return None
    try:
        reader = _Chunk(data)
        changed = reader.function()
    except (ValueError, struct.error, IndexError, KeyError):
        return None
    if not changed or reader.pos != len(data):
        return None
    return bytes(data)
