"""Text the database can store, checked wherever text comes in (the dataset import, the API's JSON bodies, every
request's parameters) so that bad input is refused with a message instead of failing at the database.

PostgreSQL refuses the NUL character in text columns (SQLite stores it, so a laptop would accept what production
refuses), and a lone surrogate (a JSON escape such as "\\ud800" without its partner) has no UTF-8 encoding at all:
no database stores it, and no page or export can show it.
"""

import re

LONE_SURROGATE = re.compile("[\ud800-\udfff]")
# How either gets into text decoded from UTF-8 (which has no encoding of a surrogate): a NUL itself, or a JSON
# escape of one of them (JSON lines, and the JSON lists in a CSV's cells). A character outside the BMP escaped as a
# surrogate pair matches too: such a file's fields are checked one by one.
UNSTORABLE_ESCAPE = re.compile(r"\\u(?:0000|[dD][89a-fA-F])")


def unstorable(text: str) -> str | None:
    """Why `text` cannot be stored, in words for the person who sent it; None when it can.

    The message never quotes the text: a lone surrogate in an error message would break the page showing it.
    """
    position = text.find("\x00")
    if position >= 0:
        return f"contains a NUL character (\\x00) at character {position + 1:,}, which cannot be stored; remove it"
    if match := LONE_SURROGATE.search(text):
        return (f"contains a lone surrogate (U+{ord(match[0]):04X}) at character {match.start() + 1:,}, which is "
                "not valid Unicode; check the escapes (\\uD800 to \\uDFFF come in pairs)")
    return None


def may_hold_unstorable(decoded: str) -> bool:
    """False when no text parsed out of `decoded` (a whole file decoded from UTF-8) can be unstorable: one pass over
    the file instead of one per field, where every row repeats its document's text."""
    return "\x00" in decoded or UNSTORABLE_ESCAPE.search(decoded) is not None
