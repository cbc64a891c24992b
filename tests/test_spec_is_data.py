"""A spec is data (docs/threat-model.md, "A spec is data"): its strings reach a generated
module only as literals (or as escaped text in its docstring), a spec string the module
cannot hold is refused with a one-line error, and every top-level name of a module is bound
once (the spec part and the inlined runtime cannot collide)."""
import ast
import inspect
import itertools
import os
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import example, given, settings, strategies as st

from gpcompiler.compiler.build import compile_spec, import_module_file
from gpcompiler.compiler.emit.literals import python_literal
from gpcompiler.compiler.spec import RESERVED_PARAMETERS, parse_spec
from gpcompiler.engines import dask as dask_engine
from gpcompiler.errors import SpecError

ROOT = Path(__file__).resolve().parent.parent
MARKER = "GPCOMPILER_SPEC_RAN"
PAYLOAD = f'__import__("os").environ.__setitem__("{MARKER}", "1")'
# Pieces that end a string, a line or a comment, start an escape or a template placeholder,
# or cannot be written as UTF-8, each followed by the payload in the fuzzed strings.
BREAKERS = ['"""', "'''", '"', "'", "\n", "\r", "\r\n", "\\", "\\N{BULLET}", "\\x41", "\x00",
            "\x0b", "\x0c", "\x1b[2J", "\u2028", "\u202e", "\ud800", "\udcff", "#", "${title}",
            "$title", "{", "}", "{0}", "%s", "# -*- coding: latin-1 -*-", ")", "]", ";"]
EXPLOITS = [f'x"""; {PAYLOAD}; """', f"x'''; {PAYLOAD}; '''", f"x\n{PAYLOAD}\n",
            f"x\r{PAYLOAD}\r", f"x\\\n{PAYLOAD}", f"x')\n{PAYLOAD}\n#", f"x\"}}; {PAYLOAD}; {{\""]
TEXT = st.lists(st.one_of(st.sampled_from(BREAKERS + [PAYLOAD, " "]), st.text(max_size=6)),
                max_size=6).map("".join)
FILE_NAME = st.lists(st.one_of(st.sampled_from(BREAKERS + [" "]), st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="/\x00"), max_size=6)),
    max_size=4).map("".join)


def toml_string(text):
    """A TOML basic string holding ``text``; a lone surrogate is written as its
    (ill-formed) UTF-8 bytes by the caller's encoding."""
    out = []
    for char in text:
        if char in '"\\':
            out.append("\\" + char)
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def spec_bytes(name, title, unit, parameter):
    """A tiny spec (two monomials) with the given strings in every place a spec holds text."""
    text = (f"name = {toml_string(name)}\ntitle = {toml_string(title)}\n[domain]\n"
            f'intervals = [["0", "1"]]\nunits = {toml_string(unit)}\n'
            f'parameters = {{ {toml_string(parameter)} = "2" }}\n'
            f"[values]\nunits = {toml_string(unit)}\n"
            '[basis]\nfamily = { name = "monomial", degree = 1 }\n')
    return text.encode("utf-8", "surrogatepass")


_imports = itertools.count()


def compile_and_import(name, title, unit, parameter, file_name="spec"):
    """Compile the spec in a fresh directory and import its module: the module, or the
    SpecError (checked to be one line naming the file). The payload must not have run."""
    os.environ.pop(MARKER, None)
    with tempfile.TemporaryDirectory() as directory:
        try:
            path = Path(directory) / f"{file_name}.toml"
            path.write_bytes(spec_bytes(name, title, unit, parameter))
        except (OSError, UnicodeEncodeError, ValueError):
            return None   # a file name the file system refuses (NUL, a lone surrogate)
        try:
            source = compile_spec(path, root=directory).source
        except SpecError as error:
            message = str(error)
            assert "\n" not in message and "\r" not in message, message
            assert message.isprintable(), message
            return error
        ast.parse(source)   # a spec that compiles gives a module
        module_path = Path(directory) / "module.py"
        module_path.write_text(source, encoding="utf-8")
        module_name = f"gpcompiler_spec_is_data_{next(_imports)}"
        try:
            module = import_module_file(module_path, module_name)
        finally:
            sys.modules.pop(module_name, None)
            assert MARKER not in os.environ, "importing the module ran spec text as code"
        assert module.NAME == name and module.TITLE == title
        assert module.UNITS == {"domain": (unit.strip(),), "values": unit.strip()}
        assert module.SPEC_PATH == path.name and list(module.PARAMETERS) == [parameter]
        assert module.__doc__.startswith(title.split(" ")[0].split("-")[0][:40])
        return module


@pytest.mark.parametrize("exploit", EXPLOITS)
@pytest.mark.parametrize("field", ["title", "unit", "parameter", "name", "file_name"])
def test_spec_text_never_runs_as_code(field, exploit):
    strings = {"name": "tiny", "title": "Tiny", "unit": "s", "parameter": "h",
               "file_name": "spec"}
    strings[field] = exploit
    result = compile_and_import(**strings)
    if field == "file_name" or (field == "title" and exploit.isprintable()):
        assert result is not None and not isinstance(result, SpecError), result


@settings(max_examples=80, deadline=None)
@given(field=st.sampled_from(["title", "unit", "parameter", "name"]), text=TEXT,
       file_name=st.one_of(st.just("spec"), FILE_NAME))
@example(field="title", text="T", file_name="\udcff\n" + PAYLOAD)
@example(field="title", text='\\"""\\', file_name="\\")
def test_fuzzed_spec_strings_are_refused_or_held_exactly(field, text, file_name):
    strings = {"name": "fuzz", "title": "Fuzz", "unit": "s", "parameter": "h"}
    strings[field] = text
    compile_and_import(**strings, file_name=file_name)


def test_printable_text_with_quotes_and_braces_is_held_exactly():
    module = compile_and_import("tiny", 'A "quoted" \\ title ${name} {0} # not a comment """',
                                'm/s "', "h", 'a"""b\\c#d${e}\n')
    assert not isinstance(module, SpecError) and module.NAME == "tiny"


@pytest.mark.parametrize("kind", ["cdf", "box"])
def test_cdf_and_box_modules_hold_spec_text_as_data(kind, tmp_path):
    """The CDF template and the box sections have their own docstrings and comments: the
    title and the file's name reach them escaped, as in a curve module."""
    title = f'x"""; {PAYLOAD}; """ \\'
    body = ('kind = "cdf"\n[domain]\nintervals = [["0", "10"]]\n[basis]\n'
            'family = { name = "legendre", degree = 2 }\n' if kind == "cdf" else
            '[domain]\nvariables = ["x", "y"]\nintervals = [["0", "1"], ["0", "1"]]\n'
            '[basis]\nfunctions = ["1", "x*y"]\n[metric]\nweight = "1 + x*y"\n')
    path = tmp_path / f'a"""b\n{PAYLOAD}.toml'
    path.write_bytes(f"name = \"tiny_{kind}\"\ntitle = {toml_string(title)}\n{body}".encode())
    os.environ.pop(MARKER, None)
    (tmp_path / "module.py").write_text(compile_spec(path, root=tmp_path).source)
    module = import_module_file(tmp_path / "module.py", f"gpcompiler_spec_is_data_{kind}")
    sys.modules.pop(f"gpcompiler_spec_is_data_{kind}")
    assert MARKER not in os.environ
    assert module.NAME == f"tiny_{kind}" and module.SPEC_PATH == path.name
    assert module.__doc__.startswith('x"""; __import__("os")')


def tiny_spec(name='"tiny"', title='"Tiny"', top="", domain=""):
    return (f"name = {name}\ntitle = {title}\n{top}\n[domain]\n{domain}\n"
            'intervals = [["0", "1"]]\n[basis]\nfunctions = ["1", "t"]\n')


@pytest.mark.parametrize("fields, expected", [
    ({"title": '"a\\u0000b"'}, "title: expected printable text"),
    ({"title": '"two\\nlines"'}, "title: expected printable text"),
    ({"title": '"tab\\there"'}, "title: expected printable text"),
    ({"title": '"right-to-left \\u202e override"'}, "title: expected printable text"),
    ({"title": f'"{"x" * 241}"'}, "title: expected printable text"),
    ({"title": '""'}, "title: expected printable text"),
    ({"title": "3"}, "title: expected printable text"),
    ({"name": '"numpy"'}, "name: expected a Python identifier"),
    ({"name": '"math"'}, "name: expected a Python identifier"),
    ({"name": '"sympy"'}, "name: expected a Python identifier"),
    ({"name": '"pandas"'}, "name: expected a Python identifier"),
    ({"name": '"Fraction"'}, "name: expected a Python identifier"),
    ({"name": '"fractions"'}, "name: expected a Python identifier"),
    ({"name": '"sys"'}, "name: expected a Python identifier"),
    ({"name": '"ok\\n"'}, "name: expected a Python identifier"),
    ({"name": '"class"'}, "name: expected a Python identifier"),
    ({"name": '"__init__"'}, "name: expected a Python identifier"),   # a package's own file
    ({"name": '"caf\\u00e9"'}, "name: expected a Python identifier"),
    ({"domain": 'units = "m\\u0000"'}, "domain.units: expected a unit name"),
    ({"domain": 'variables = ["t\\n"]'}, "domain.variables: expected"),
    ({"domain": 'parameters = { "h\\n" = "1" }'},
     "domain.parameters.'h\\n': expected an identifier"),
    ({"domain": 'parameters = { c = "1" }'}, "domain.parameters.c: expected an identifier"),
    ({"domain": 'parameters = { points = "1" }'},
     "domain.parameters.points: expected an identifier"),
    ({"top": '"evil\\nkey" = 1'}, "'evil\\nkey': unknown key"),
    ({"domain": 'parameters = { h = "10**200*10**200" }'},
     "domain.parameters.h: expected a positive finite default"),   # was {'h': inf}
    ({"domain": 'parameters = { h = "10**-200*10**-200" }'},
     "domain.parameters.h: expected a positive finite default"),
])
def test_bad_spec_strings_are_refused_in_one_line(fields, expected):
    with pytest.raises(SpecError) as info:
        parse_spec(tiny_spec(**fields).encode(), Path("bad.toml"))
    message = str(info.value)
    assert expected in message and message.startswith("bad.toml: "), message
    assert "\n" not in message and message.isprintable()


def test_reserved_parameters_cover_every_argument_of_the_api():
    """A spec parameter is a keyword argument of every function taking **params: it must not
    be any other argument's name, in any generated module or the Dask engine."""
    functions = [dask_engine.privatize_batch]
    for path in sorted((ROOT / "generated").glob("*.py")):
        module = import_module_file(path, f"gpcompiler_spec_is_data_api_{path.stem}")
        functions += [f for name, f in vars(module).items()
                      if inspect.isfunction(f) and not name.startswith("_")]
    arguments = set()
    for function in functions:
        signature = inspect.signature(function).parameters.values()
        if any(p.kind is p.VAR_KEYWORD for p in signature):
            arguments |= {p.name for p in signature if p.kind is not p.VAR_KEYWORD}
    assert arguments and arguments <= RESERVED_PARAMETERS, arguments - RESERVED_PARAMETERS


@pytest.mark.parametrize("value", [
    "", "plain", 'a"""b', "x\n\r\x00\\N{BULLET}\ud800\u2028", "é" * 300, ("s", None),
    {"domain": ("s", None), "values": "m"}])
def test_python_literal_round_trips(value):
    code = python_literal(value, width=60)
    assert ast.literal_eval(code) == value
    assert all(len(line.strip()) <= 60 for line in code.split("\n"))


def bound_twice(source):
    """The top-level names of a module bound more than once (definitions, assignments,
    imports; nothing inside functions, classes or comprehensions)."""
    counts = {}

    def visit(node):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            counts[node.name] = counts.get(node.name, 0) + 1
            return
        if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp,
                             ast.GeneratorExp)):
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                name = (alias.asname or alias.name).split(".")[0]
                counts[name] = counts.get(name, 0) + 1
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            counts[node.id] = counts.get(node.id, 0) + 1
        for child in ast.iter_child_nodes(node):
            visit(child)

    for statement in ast.parse(source).body:
        visit(statement)
    return sorted(name for name, count in counts.items() if count > 1)


def test_bound_twice_sees_every_kind_of_binding():
    source = ("import os\nfrom numpy import os\nA = 1\ndef A(): B = 2\nC, D = 1, 2\nD += 1\n"
              "[E for E in ()]\nclass F: pass\nF: int = 3\n")
    assert bound_twice(source) == ["A", "D", "F", "os"]


@pytest.mark.parametrize("path", sorted((ROOT / "generated").glob("*.py")), ids=lambda p: p.stem)
def test_every_generated_module_binds_each_top_level_name_once(path):
    assert bound_twice(path.read_text()) == []


SPECS = {
    "hold": '[domain]\nintervals = [["0", "T"]]\nparameters = { T = "2" }\n[basis]\n'
            'family = { name = "legendre", degree = 3 }\n[curve]\noutside = "hold"\n',
    "weighted": '[domain]\nintervals = [["-1", "1"]]\n[basis]\nfunctions = ["1", "t", "t**2"]\n'
                '[metric]\nweight = "1 + t**2"\n',
    "sobolev": '[domain]\nintervals = [["0", "1"]]\n[basis]\nfunctions = ["1", "sin(t)"]\n'
               "[metric]\nsobolev = 1\n",
    "box": '[domain]\nvariables = ["x", "y"]\nintervals = [["0", "1"], ["0", "2"]]\n'
           '[basis]\nfamily = { name = "monomial", total_degree = 2 }\n',
    "box_expressions": '[domain]\nvariables = ["u", "v"]\nintervals = [["0", "1"], ["0", "1"]]\n'
                       '[basis]\nfunctions = ["1", "sin(u)", "cos(v)"]\n',
    "cdf": 'kind = "cdf"\n[domain]\nintervals = [["0", "10"]]\n[basis]\n'
           'family = { name = "legendre", degree = 3 }\n',
}


@pytest.mark.parametrize("kind", sorted(SPECS))
def test_compiled_test_specs_bind_each_top_level_name_once(kind, tmp_path):
    path = tmp_path / f"{kind}.toml"
    path.write_text(f'name = "{kind}"\n' + SPECS[kind])
    assert bound_twice(compile_spec(path, root=tmp_path).source) == []
