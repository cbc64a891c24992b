"""Building the C target in the tests (docs/reference/c.md): the documented strict flags, the
compiler, and the test driver tests/c/c_target_driver.c built against one module's NAME.c."""
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DRIVER = ROOT / "tests" / "c" / "c_target_driver.c"
FLAGS = ["-std=c11", "-O2", "-ffp-contract=off", "-Wall", "-Wextra", "-pedantic", "-Werror"]


def compiler():
    found = shutil.which("cc") or shutil.which("gcc")
    assert found, "the C target's tests need a C compiler (cc or gcc) on PATH"
    return found


def build_driver(directory, name, program, optimize="-O2"):
    """The test driver built with the strict flags against ``directory``/NAME.c and NAME.h
    (``optimize``: -O0 where only strings are tested, a faster build)."""
    flags = [optimize if flag == "-O2" else flag for flag in FLAGS]
    subprocess.run([compiler(), *flags, "-D_POSIX_C_SOURCE=199309L", f"-DMODULE={name}",
                    f'-DHEADER="{name}.h"', f"-I{directory}", str(DRIVER),
                    str(Path(directory) / f"{name}.c"), "-o", str(program), "-lm"],
                   check=True, capture_output=True, text=True)
    return program


def build_spec_driver(directory, name, driver, optimize="-O0", device=False, extra=()):
    """tests/c/``driver`` built with the strict flags (``optimize``, and ``extra``) against the
    C target of specs/NAME.toml, emitted into ``directory`` (NAME.c, and NAME_device.c with
    ``device``)."""
    from gpcompiler.compiler.build import compile_spec
    from gpcompiler.compiler.emit.c import emit_c, lower_c
    analysis = compile_spec(ROOT / "specs" / f"{name}.toml", ROOT, emit=False).analysis
    for file_name, text in emit_c(lower_c(analysis)).items():
        (directory / file_name).write_text(text)
    program = directory / f"{Path(driver).stem}_{name}"
    sources = [f"{name}.c", *([f"{name}_device.c"] if device else [])]
    flags = [optimize if flag == "-O2" else flag for flag in FLAGS]
    subprocess.run([compiler(), *flags, *extra, f"-DMODULE={name}", f'-DHEADER="{name}.h"',
                    f"-I{directory}", str(ROOT / "tests" / "c" / driver),
                    *(str(directory / source) for source in sources), "-o", str(program), "-lm"],
                   check=True, capture_output=True, text=True)
    return program


COMPILERS = [cc for cc in ("cc", "clang") if shutil.which(cc)]


def build(compiler, sources, output, *extra):
    """``sources`` built with the strict flags (no warning) into ``output``."""
    done = subprocess.run([compiler, *FLAGS, *extra, *map(str, sources), "-lm", "-o",
                           str(output)], capture_output=True, text=True)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return output


class Programs(dict):
    """{(compiler, name): the protocol program of generated/c/NAME.c and NAME_main.c}, each
    built into ``directory`` on first use (the C and JS conformance tests share them)."""

    def __init__(self, directory):
        super().__init__()
        self.directory = directory

    def __missing__(self, key):
        compiler, name = key
        c_dir = ROOT / "generated" / "c"
        self[key] = build(compiler, [c_dir / f"{name}.c", c_dir / f"{name}_main.c"],
                          Path(self.directory) / f"{name}-{compiler}")
        return self[key]
