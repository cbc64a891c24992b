"""What every command shares: limits, output on stdout and stderr, progress
bars, and errors that name the file at work."""
import contextlib
import math
import sys

from ..errors import UserError


# A noise scale above this overflows float64 arithmetic on its squares (norms, variances).
MAX_NOISE_SCALE = 1e100


MAX_GRID = 10 ** 7      # public evaluation points of a release (--grid): 80 MB of values


MAX_FIELD_GRID = 10 ** 6  # for a field, evaluated with (points, m) basis values at once


# Released numbers are written exactly (repr: the shortest string that reads back as the
# same float64): released coefficients are exact multiples of the lattice step gamma.
DEFAULT_GRID = 1000


# `-o -`: the release goes to standard output (the default of privatize).
STDOUT = "-"


def _progress(message):
    print(message, file=sys.stderr, flush=True)


def say(args, message):
    """Informational output, unless --quiet: on stdout, or on stderr when stdout carries
    the release (`-o -`)."""
    if not args.quiet:
        print(message, file=sys.stderr if getattr(args, "output", None) == STDOUT
              else sys.stdout)


def not_private(message):
    """A comparison with the true data (--compare): standard error, labelled."""
    print(f"not private: {message}", file=sys.stderr)


# What happens to bad data, in the same words everywhere (README, docs/threat-model.md
# "Public limits", docs/faq.md): by design, never an error.
BY_DESIGN = ("by design: one person's bad data never stops a release (docs/threat-model.md, "
             "\"Public limits\")")
ZERO_RELEASE = "released as the {zero} in its place, " + BY_DESIGN


def tell_invalid(args, invalid, total, noun, zero, hint="", shown=5):
    """One line for the data owner: how many of ``total`` curves (fields) were not valid,
    each reason once with the first ids that had it (the first ``shown`` reasons, then
    how many curves had others), then ``hint`` (once)."""
    if not invalid or args.quiet:
        return
    reasons = {}
    for key, reason in invalid:
        reasons.setdefault(reason, []).append(str(key))
    groups = "; ".join(", ".join(keys[:5]) + (f" and {len(keys) - 5} more" if len(keys) > 5
                                             else "") + f" ({reason})"
                       for reason, keys in list(reasons.items())[:shown])
    others = sum(len(keys) for keys in list(reasons.values())[shown:])
    if others:
        groups += f"; {plural(others, noun)} for {len(reasons) - shown} other reasons"
    verb = "was not valid" if len(invalid) == 1 else "were not valid"
    not_private(f"{len(invalid)} of {plural(total, noun)} {verb}, each "
                f"{ZERO_RELEASE.format(zero=zero)}: {groups}" + (f". {hint}" if hint else ""))


def progress_bar(args, total, unit):
    """A tqdm progress bar on stderr; silent with --quiet or when stderr is not a terminal."""
    from tqdm import tqdm
    return tqdm(total=total, unit=unit, file=sys.stderr, leave=False,
                disable=True if args.quiet else None)


class Steps:
    """Progress callback of the pipeline (called once per spec, before its work): counts
    the specs done on a progress bar and remembers the spec at work, so that an error can
    name it; :meth:`stage` shows the stage of a long compile without counting it."""

    def __init__(self, args, total):
        self.bar = progress_bar(args, total, "spec")
        self.current = None

    def __call__(self, message):
        if self.current is not None:
            self.bar.update()
        self.current = message.split(" ", 1)[-1]
        self.bar.set_postfix_str(self.current)

    def stage(self, message):
        """A stage of the spec at work ("PATH: STAGE (N s)"): shown, not counted."""
        self.bar.set_postfix_str(message)

    def named(self, error):
        """``error`` as a UserError whose message names the spec at work."""
        return named_error(self.current, error)


def named_error(path, error):
    message = str(error)
    if path is None or str(path) in message:
        return error
    return UserError(f"{path}: {message}")


def plural(number, noun):
    """``number noun``, the noun plural (with an s) unless the number is 1."""
    return f"{number} {noun}" + ("" if number == 1 else "s")


def args_budget(args):
    return {"epsilon": args.epsilon} if args.epsilon is not None else {"rho": args.rho}


def noise_floor(budget):
    """A lower bound on the noise per coordinate of every mechanism at this budget:
    1/epsilon (GP) or 1/sqrt(2 rho) (CGP)."""
    if "epsilon" in budget:
        return 1 / budget["epsilon"]
    return 1 / math.sqrt(2 * budget["rho"])


def scheduled(command):
    """``command`` with the lifetime of a --scheduler client: connected on first use
    (:func:`scheduler_engine`), closed when the command ends."""
    def run(args):
        with contextlib.ExitStack() as stack:
            args.scheduler_stack = stack
            return command(args)
    run.__doc__ = command.__doc__
    return run


def scheduler_engine(args):
    """gpcompiler.engines.dask with a client of --scheduler connected, or None without it."""
    if args.scheduler is None:
        return None
    try:
        from ..engines import dask as engine
    except ImportError:
        raise UserError("--scheduler needs Dask: pip install 'gpcompiler[dask]'") from None
    if not getattr(args, "connected", False):
        args.scheduler_stack.enter_context(engine.connected(args.scheduler))
        args.connected = True
    return engine
