"""The protocol program NAME_main.c of the C target (docs/reference/c.md, "The protocol
program"): the Python target's `python NAME.py` (runtime/protocol.py) in C, written against
the API of NAME.h only. Its help texts are argparse's for the program's name, at 80 columns."""
import string
from importlib import resources

from .emit import RUNTIME_REPR, inlined

COMMANDS = {
    "privatize": ["[-h]", "(--epsilon EPSILON | --rho RHO)", "[--bound BOUND]", "[--key KEY]"],
    "release": ["[-h]", "(--epsilon EPSILON | --rho RHO)", "[--bound BOUND]", "[--key KEY]"],
    "project": ["[-h]"],
}
OPTIONS = """
options:
  -h, --help         show this help message and exit
  --epsilon EPSILON  GP budget
  --rho RHO          CGP budget
  --bound BOUND      the public norm bound B
  --key KEY          256-bit key (64 hex digits): reproducible releases for
                     conformance tests only (default: OS entropy)
"""
PROJECT_OPTIONS = """
options:
  -h, --help  show this help message and exit
"""
TOP = """
the test protocol of gpcompiler's targets

positional arguments:
  {privatize,release,project}
    privatize           release the curves of coefficients.csv on stdin
    release             release the curves of curves.csv on stdin
    project             the projections of the curves of curves.csv on stdin

options:
  -h, --help            show this help message and exit
"""
WIDTH = 78  # argparse's text width in a terminal of 80 columns


def usage(prog, optionals, positionals=()):
    """argparse's usage line of ``prog``, wrapped as HelpFormatter._format_usage wraps it."""
    prefix = "usage: "
    line = " ".join([prog, *optionals, *positionals])
    if len(prefix) + len(line) <= WIDTH:
        return prefix + line + "\n"
    short = len(prefix) + len(prog) <= 0.75 * WIDTH
    indent = " " * (len(prefix) + (len(prog) + 1 if short else 0))

    def lines(parts, first=False):
        out, current, length = [], [], len(prefix) - 1 if first else len(indent) - 1
        for part in parts:
            if length + 1 + len(part) > WIDTH and current:
                out.append(indent + " ".join(current))
                current, length = [], len(indent) - 1
            current.append(part)
            length += len(part) + 1
        out.append(indent + " ".join(current))
        if first:
            out[0] = out[0][len(indent):]
        return out
    if short:
        wrapped = lines([prog, *optionals], True) + (lines(positionals) if positionals else [])
    else:  # a long name on its own line, the parts below it
        wrapped = lines([*optionals, *positionals])
        if len(wrapped) > 1:
            wrapped = lines(optionals) + (lines(positionals) if positionals else [])
        wrapped = [prog] + wrapped
    return prefix + "\n".join(wrapped) + "\n"


def help_texts(name):
    """{command or "top": its --help text}."""
    texts = {command: usage(f"{name} {command}", parts)
             + (PROJECT_OPTIONS if command == "project" else OPTIONS)
             for command, parts in COMMANDS.items()}
    texts["top"] = usage(name, ["[-h]"], ["{privatize,release,project}", "..."]) + TOP
    return texts


def c_lines(text, indent):
    """``text`` (printable ASCII and newlines) as C string literals, one per line."""
    assert all(" " <= c <= "~" or c == "\n" for c in text), text
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return f"\n{indent}".join(f'"{line}\\n"' for line in escaped.split("\n")[:-1])


def emit_program(name):
    """The text of NAME_main.c for the module ``name`` (an ASCII identifier)."""
    template = resources.files(__package__).joinpath("templates/main.c.tmpl").read_text()
    texts = help_texts(name)
    return string.Template(template).substitute(
        name=name, repr_runtime=inlined(RUNTIME_REPR),
        **{f"help_{key}": c_lines(text, " " * 4) for key, text in texts.items()})
