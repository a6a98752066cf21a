"""Values the user gave (paths, environment variables), fit for one line of a message, and launcher variables read as
the whole numbers they must be."""

from __future__ import annotations

import re

# Line breaks and terminal controls: C0 (newline, tab, ESC), DEL, C1 (U+0085 NEL among them), the Unicode line and
# paragraph separators (str.splitlines breaks on them), and lone surrogates (a path's undecodable bytes).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")
_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}
_DECIMAL = re.compile("[0-9]+")


def _escape(m: re.Match[str]) -> str:
    c = m.group()
    if c in _NAMED:
        return _NAMED[c]
    return f"\\x{ord(c):02x}" if ord(c) < 0x80 else f"\\u{ord(c):04x}"


def shown(value: str, limit: int = 200) -> str:
    """`value` fit for one line, as the binary's shown() (src/util/strings.h) writes it: control characters as \\n,
    \\t, \\x1b, \\x7f, \\u0085, so that no value breaks a message into lines or draws on a terminal; past `limit`
    characters it is cut, and the cut says how long the value was ("...(100000 characters)"). Other characters as
    they are."""
    cut = len(value) > limit
    out = _CONTROL.sub(_escape, value[:limit] if cut else value)
    return f"{out}...({len(value)} characters)" if cut else out


def shown_value(value: str, limit: int = 200) -> str:
    """An environment variable's value for a message: quoted as repr() quotes it (control and invisible characters
    escaped), cut past `limit` characters as shown() cuts."""
    if len(value) <= limit:
        return repr(value)
    return f"{value[:limit]!r}...({len(value)} characters)"


def whole_number(name: str, value: str, give: str) -> int:
    """`value`, the variable `name`'s, as a whole number written in ASCII digits (0-9) alone: no sign, no whitespace,
    no other script's digits ('١', '²' pass str.isdigit() and int() reads some of them). Anything else raises ValueError
    in one line naming the variable, its value and `give` (what to set it to)."""
    if _DECIMAL.fullmatch(value) is None:
        raise ValueError(f"{name}={shown_value(value)} is not a number (ASCII digits 0-9 alone); {give}")
    return int(value)
