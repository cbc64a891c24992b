"""`gpcompiler compile`, `check` and `explain`: the compiler's commands."""
import sys
from pathlib import Path

from ..errors import UserError
from .common import Steps, named_error, say


def cmd_compile(args):
    """`gpcompiler compile SPEC... -o DIR [--target c|js]`: write the generated modules."""
    from ..compiler.build import compile_files
    from ..io.curves import check_writable
    check_writable(args.output, directory=True)
    steps = Steps(args, len(args.specs))
    try:
        written = compile_files(args.specs, args.output, progress=steps, stages=steps.stage,
                                target=args.target)
    except UserError as error:
        raise steps.named(error) from None
    finally:
        steps.bar.close()
    for path in written:
        say(args, f"wrote {path}")
    return 0


def cmd_check(args):
    """`gpcompiler check`: regenerate every spec, diff against generated/, report modules
    of generated/ that no spec makes (stale)."""
    from ..compiler.build import c_target_names, check
    from ..compiler.spec import load_spec
    spec_dir, generated = Path(args.specs), Path(args.generated)
    if not spec_dir.is_dir():
        raise UserError(f"no spec directory {spec_dir} (looked for {spec_dir.absolute()}): run "
                        "from the repository's root, or pass --specs DIR and --generated DIR")
    specs = sorted(spec_dir.glob("*.toml"))
    if not specs:
        raise UserError(f"no spec (*.toml) in {spec_dir} ({spec_dir.absolute()}): pass "
                        "--specs DIR, the directory of the spec files")
    if not generated.is_dir():
        raise UserError(f"no directory of generated modules {generated} (looked for "
                        f"{generated.absolute()}): pass --generated DIR")
    steps = Steps(args, len(specs))
    try:
        problems = check(spec_dir, generated, progress=steps, stages=steps.stage)
        loaded = [load_spec(path) for path in specs]
    except UserError as error:
        raise steps.named(error) from None
    finally:
        steps.bar.close()
    for diff in problems:
        sys.stdout.write(diff)
    names = {spec.name for spec in loaded}
    stale = sorted([p for p in generated.glob("*.py") if p.stem not in names] + [
        p for target in ("c", "js") for p in (generated / target).glob("*")
        if p.name not in {name for spec in loaded for name in c_target_names(spec, target)}])
    for path in stale:
        print(f"stale: {path} is made by no spec in {spec_dir}/: remove it")
    if problems:
        print(f"{len(problems)} generated module(s) differ from their specs: "
              f"run `gpcompiler compile {spec_dir}/*.toml -o {generated}`, and for the curves "
              f"in one variable `gpcompiler compile SPEC... --target c -o {generated}/c` and "
              f"`gpcompiler compile SPEC... --target js -o {generated}/js`",
              file=sys.stderr)
    if problems or stale:
        return 1
    say(args, f"all {len(specs)} generated modules in {generated}/ match {spec_dir}/")
    return 0


def cmd_explain(args):
    """`gpcompiler explain SPEC`: the exact derivation as Markdown with LaTeX (served from
    the build cache when the spec and the compiler are unchanged)."""
    from ..compiler.build import explained
    from ..io.curves import check_writable, write_text_atomically
    if args.output:
        check_writable(args.output)
    try:
        text = explained(args.spec)
    except UserError as error:
        raise named_error(args.spec, error) from None
    if args.output:
        write_text_atomically(args.output, text)
        say(args, f"wrote {args.output}")
    else:
        sys.stdout.write(text)
    return 0


def cmd_specs(args):
    """`gpcompiler specs`: the shipped specs (each usable by name, e.g. `privatize sinc_ecg
    data.csv`), with what they release and their title."""
    import tomllib
    from ..compiler.build import SHIPPED_SPECS, shipped_names
    for name in shipped_names():
        document = tomllib.loads((SHIPPED_SPECS / f"{name}.toml").read_text(encoding="utf-8"))
        print(f"{name:<18} {_dimension(document):<16} {document.get('title', '')}")
    return 0


def _dimension(document):
    """What a spec releases, from its TOML: a CDF, or a function of its variables into R^n."""
    if document.get("kind") == "cdf":
        return "CDF of a column"
    variables = document.get("domain", {}).get("variables", ["t"])
    values = document.get("values", {}).get("dimension", 1)
    where = variables[0] if len(variables) == 1 else f"({', '.join(variables)})"
    return f"{where} -> R^{values}"
