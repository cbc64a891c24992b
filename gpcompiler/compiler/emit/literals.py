"""Spec text in generated code (docs/threat-model.md, "A spec is data"). Every string that
comes from a spec (its name, title, path, units, parameter and variable names) reaches a
generated module through these functions only, never substituted into code as it is: as a
literal (python_literal), as escaped text in a docstring or comment (python_text), or as
a checked identifier (python_identifier). Each target has its own here: the NumPy target's
are python_*; a C or JavaScript target adds c_* or js_* beside them."""
import ast
import json
import keyword


def python_literal(value, width=None):
    """The Python literal of ``value`` (a str, int, bool or None, or tuples, lists and dicts
    of them): its repr, checked to read back as ``value``. A string whose literal exceeds
    ``width`` columns is split into adjacent literals of at most ``width`` columns, one per
    indented line in parentheses, at spaces where it can."""
    code = repr(value)
    if isinstance(value, str) and width is not None and len(code) > width:
        code = "(\n" + "\n".join(f"    {part!r}" for part in _parts(value, width)) + "\n)"
    read = ast.literal_eval(code)
    if type(read) is not type(value) or read != value:
        raise AssertionError(f"{code} does not read back as the value it was made from")
    return code


def _parts(text, width):
    """Consecutive pieces of ``text`` (joined, they are ``text``) whose reprs fit in
    ``width`` columns (at least one character each), each ending after a space if one
    lets it."""
    parts, start = [], 0
    while start < len(text):
        end = start + 1
        while end < len(text) and len(repr(text[start:end + 1])) <= width:
            end += 1
        space = text.rfind(" ", start, end)
        if end < len(text) and space >= start:
            end = space + 1
        parts.append(text[start:end])
        start = end
    return parts


def python_text(text):
    """``text`` to show in a docstring or a comment: every character that is not printable
    (a line end, NUL, a control, format or separator character, a surrogate: what would end
    a comment or could hide code from a reviewer), every backslash and every double quote
    is written as its Python escape. A docstring made of it holds ``text`` exactly, and a
    comment shows it on one line."""
    if text.isprintable() and "\\" not in text and '"' not in text:
        return text
    return "".join(char if char.isprintable() and char not in '\\"' else
                   '\\"' if char == '"' else repr(char)[1:-1] for char in text)


def python_identifier(name):
    """``name`` where generated code uses it as (part of) a Python name: an ASCII identifier
    that is not a keyword, as the spec's validation makes every variable name (an
    AssertionError otherwise: a bug, never a module)."""
    if not (isinstance(name, str) and name.isascii() and name.isidentifier()
            and not keyword.iskeyword(name)):
        raise AssertionError(f"{name!r} is not an ASCII identifier")
    return name


def c_string(text, width=None):
    """The C string literal of ``text`` (UTF-8): every byte that is not printable ASCII,
    every double quote, backslash and question mark (no trigraph can form) written as an
    escape (three-digit octal for the bytes, so no following digit is swallowed); the
    literal holds ``text``'s bytes exactly (a lone surrogate as its UTF-8 bytes, as the
    spec file held it). Beyond ``width`` columns it is split into adjacent literals, one per
    indented line (C joins them)."""
    out = []
    for byte in text.encode("utf-8", "surrogatepass"):
        char = chr(byte)
        if char in '"\\?':
            out.append("\\" + char)
        elif 0x20 <= byte < 0x7F:
            out.append(char)
        else:
            out.append(f"\\{byte:03o}")
    lines, line = [], ""
    for piece in out:
        if width is not None and line and len(line) + len(piece) + 2 > width:
            lines.append(line)
            line = ""
        line += piece
    return '"\n    "'.join(lines + [line]).join('""')


def c_comment_text(text):
    """``text`` to show inside a C block comment, on one line: python_text's escapes (every
    non-printable character, backslash and double quote), a non-ASCII character as its
    \\u escape, and every "*/" and "/*" broken by a space, so the comment cannot end or
    nest early; "??" is written "?\\?" (no trigraph), and text ending in a backslash gets a
    space after it (no line splice)."""
    shown = python_text(text).encode("ascii", "backslashreplace").decode("ascii")
    while "*/" in shown or "/*" in shown:
        shown = shown.replace("*/", "* /").replace("/*", "/ *")
    while "??" in shown:
        shown = shown.replace("??", "?\\?")
    return shown + " " if shown.endswith("\\") else shown


def c_identifier(name):
    """``name`` where generated C uses it as (part of) an identifier: an ASCII identifier
    (an AssertionError otherwise: a bug, never a module)."""
    if not (isinstance(name, str) and name.isascii() and name.isidentifier()):
        raise AssertionError(f"{name!r} is not an ASCII identifier")
    return name


def js_string(text):
    """The JavaScript string literal of ``text``: JSON's, every character beyond printable
    ASCII (line and paragraph separators, surrogates) written as a \\u escape, checked to
    read back as ``text``."""
    code = json.dumps(text, ensure_ascii=True)
    if json.loads(code) != text or not all(" " <= char <= "~" for char in code):
        raise AssertionError(f"{code} does not read back as the text it was made from")
    return code


def js_comment_text(text):
    """``text`` to show inside a JavaScript block comment, on one line: c_comment_text's
    escapes (a block comment ends at "*/" in both languages)."""
    return c_comment_text(text)
