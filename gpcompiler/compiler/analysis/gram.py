"""Gram matrices by integration: exact (SymPy), from a weight's moments, or
numerical (mpmath quadrature, its errors checked), in 1-D and over a box."""
import dataclasses

import mpmath
import sympy

from ...errors import SpecError, SymbolicLimitError
from ..symbolic import DIGITS, simplify_entry, time_limit
from .core import AT_DEFAULTS, basis_names
from .kinks import breakpoints
from .weights import (interval_weight_singularities, weight_axis_spec, weight_factors,
                      weight_singularities)


INTEGRATION_SECONDS = 30


CHECK_DIGITS = 12   # symbolic Gram entries agree with mpmath to 1e-12 of their scale


INTEGRATION = "symbolic integration of the Gram matrix"


def weighted_atom_gram(spec, atoms):
    """(W, method), W_ab = int psi_a psi_b w over the Legendre atoms: from the weight's
    moments in 1-D, as a product of such factors for a separable weight over a box; None
    for a weight over a box that does not separate."""
    if spec.dimension == 1:
        return weighted_legendre_gram(spec, atoms.size)
    return separable_atom_gram(spec, atoms)


def _integrate(expression, *limits, **options):
    """sympy.integrate; SymPy's own failures inside (a TypeError from a series expansion,
    say) mean no closed form, as a timeout does: the caller falls back to mpmath."""
    try:
        return sympy.integrate(expression, *limits, **options)
    except (TypeError, ValueError, NotImplementedError, ZeroDivisionError,
            AttributeError, RecursionError) as error:
        raise SymbolicLimitError(f"SymPy failed: {type(error).__name__}",
                                 limit=INTEGRATION) from None


def weighted_legendre_gram(spec, size):
    """(W, method): W_pq = int L_p L_q w dt for the normalized Legendre atoms L_0..L_(size-1)
    of a 1-D spec with a weight, from the weight's Legendre moments nu_n = int P_n(u) w dt,
    n <= 2 size - 2, and the exact linearization of P_p P_q (Adams):
    P_p P_q = sum_r A_(p-r) A_r A_(q-r) / A_(p+q-r) (2p+2q-4r+1)/(2p+2q-2r+1) P_(p+q-2r),
    A_r = binomial(2r, r)/4^r. The moments are exact (symbolic integrals of t^k w, within
    INTEGRATION_SECONDS in all) or tanh-sinh at 2 DIGITS (numerical, robust to the end
    singularities d^alpha, alpha > -1, that interval_weight_singularities admits)."""
    interval_weight_singularities(spec)
    moments, method = _legendre_moments(spec, 2 * size - 1)
    lo, hi = spec.interval
    A = [sympy.binomial(2 * r, r) / sympy.Integer(4) ** r for r in range(2 * size)]

    def entry(p, q):
        total = sum(A[p - r] * A[r] * A[q - r] / A[p + q - r]
                    * sympy.Rational(2 * p + 2 * q - 4 * r + 1, 2 * p + 2 * q - 2 * r + 1)
                    * moments[p + q - 2 * r] for r in range(min(p, q) + 1))
        return keep_float(sympy.sqrt((2 * p + 1) * (2 * q + 1)) / (hi - lo) * total)
    return sympy.Matrix(size, size, entry), method


def keep_float(value):
    """simplify_entry for exact values; numerical ones stay Floats (never guessed back)."""
    return value if value.has(sympy.Float) else simplify_entry(sympy.expand(value))


def _legendre_moments(spec, count):
    """nu_n = int_a^b P_n(u) w dt, n < count: exact, else numerical (see above)."""
    t, (lo, hi), weight = spec.variable, spec.interval, spec.metric.weight
    u = (2 * t - lo - hi) / (hi - lo)
    jacobi = _jacobi_form(weight, t, lo, hi)
    try:
        with time_limit(INTEGRATION_SECONDS, INTEGRATION):
            powers = [] if jacobi is None else _jacobi_moments(*jacobi, lo, hi, count)
            for k in range(len(powers), count):
                value = _integrate(t ** k * weight, (t, lo, hi), meijerg=False)
                if value.has(sympy.Integral):   # Meijer G last: often far slower
                    value = _integrate(t ** k * weight, (t, lo, hi))
                if value.has(sympy.Integral, sympy.Piecewise) or not value.is_finite:
                    raise SymbolicLimitError("no closed form", limit=INTEGRATION)
                powers.append(value)
        moments = []
        for n in range(count):
            poly = sympy.Poly(sympy.expand(sympy.legendre(n, u)), t)
            moments.append(simplify_entry(sum(c * powers[k] for (k,), c in poly.terms())))
        how = ("in closed form (w = c (t - a)^alpha (b - t)^beta: Beta functions)"
               if jacobi else "by symbolic integration")
        return moments, (f"exact: the weight's moments int t^k w dt {how}, combined exactly "
                         "by the linearization of P_p P_q")
    except SymbolicLimitError as error:
        if error.limit != INTEGRATION:
            raise
    function = sympy.lambdify(t, weight.subs(spec.defaults), "mpmath")
    moments = numerical_moments(function, *_mp_interval(spec), count)
    return [sympy.Float(m, 2 * DIGITS) for m in moments], (f"numerical: the weight's moments int P_n(u) w dt by mpmath tanh-sinh at "
                     f"{2 * DIGITS} digits, at the default parameters, combined by the exact "
                     "linearization of P_p P_q")


def numerical_moments(function, a, b, count):
    """int_a^b P_n(u) w dt, n < count, by tanh-sinh at 2 DIGITS between _breakpoints."""
    with mpmath.workdps(2 * DIGITS):
        points = _breakpoints(function, a, b)
        return [mpmath.quad(lambda v, n=n: mpmath.legendre(n, (2 * v - a - b) / (b - a))
                            * function(v), points) for n in range(count)]


def _breakpoints(function, a, b, pieces=32, scan=4096):
    """[a, ..., b]: on a finite interval, ``pieces`` equal pieces and every local maximum of
    |w| on a grid of ``scan`` steps, so tanh-sinh meets a narrow peak of the weight at an
    end of its piece instead of missing it between its nodes (numerical)."""
    if not (mpmath.isfinite(a) and mpmath.isfinite(b)):
        return [a, b]
    grid = [a + (b - a) * k / scan for k in range(1, scan)]
    values = [abs(function(v)) for v in grid]
    peaks = [grid[k] for k in range(1, scan - 2)
             if values[k - 1] < values[k] >= values[k + 1]]
    return sorted(set([a + (b - a) * k / pieces for k in range(pieces + 1)] + peaks))


def _jacobi_form(weight, t, lo, hi):
    """(c, alpha, beta) with w = c (t - lo)^alpha (b - t)^beta exactly on (lo, hi), c > 0,
    when every factor of w in t is a power of a polynomial whose roots are the ends."""
    constant, exponents = sympy.Integer(1), {lo: sympy.Integer(0), hi: sympy.Integer(0)}
    for factor in sympy.Mul.make_args(weight):
        base, power = factor.as_base_exp()
        if not factor.has(t):
            constant *= factor
            continue
        if power.has(t) or not base.is_polynomial(t):
            return None
        lead, parts = sympy.factor_list(base, t)
        for g, m in parts:
            poly = sympy.Poly(g, t)
            if poly.degree() != 1:
                return None
            slope, root = poly.LC(), -poly.nth(0) / poly.LC()
            end = next((e for e in (lo, hi) if sympy.simplify(root - e) == 0), None)
            if end is None:
                return None
            lead *= (slope if end == lo else -slope) ** m
            exponents[end] += m * power
        if lead.is_positive is not True:
            return None
        constant *= lead ** power
    return constant, exponents[lo], exponents[hi]


def _jacobi_moments(constant, alpha, beta, lo, hi, count):
    """int_lo^hi t^k c (t - lo)^alpha (hi - t)^beta dt, k < count, with t = lo + L s:
    c L^(1 + alpha + beta) sum_j binomial(k, j) lo^(k-j) L^j B(j + alpha + 1, beta + 1)."""
    length = hi - lo

    def beta_function(p, q):
        return sympy.gamma(p) * sympy.gamma(q) / sympy.gamma(p + q)
    return [simplify_entry(sympy.gammasimp(constant * length ** (1 + alpha + beta) * sum(
        sympy.binomial(k, j) * lo ** (k - j) * length ** j
        * beta_function(j + alpha + 1, beta + 1) for j in range(k + 1))))
        for k in range(count)]


def sinc_gram(spec):
    """Closed form for sinc(alpha t - beta_j) on R: G_jk = sinc(beta_j - beta_k)/|alpha|."""
    if spec.interval != (-sympy.oo, sympy.oo) or spec.vector_basis or spec.metric.kind != "L2":
        return None
    t, pieces = spec.variable, []
    for (f,) in spec.functions:
        if not isinstance(f, sympy.sinc):
            return None
        argument = sympy.expand(f.args[0] / sympy.pi)
        alpha = sympy.simplify(sympy.diff(argument, t))
        beta = sympy.simplify(argument - alpha * t)
        if alpha.has(t) or beta.has(t) or alpha.is_positive is not True:
            return None
        pieces.append((alpha, beta))
    alpha = pieces[0][0]
    if any(sympy.simplify(p[0] - alpha) != 0 for p in pieces):
        return None
    m = len(pieces)
    entries = {}
    for j in range(m):
        for k in range(j + 1):
            value = simplify_entry(sympy.sinc(sympy.pi * (pieces[j][1] - pieces[k][1])) / alpha)
            entries[j, k] = entries[k, j] = value
    return (sympy.Matrix(m, m, lambda j, k: entries[j, k]),
            "closed form: int sinc(a t - b_j) sinc(a t - b_k) dt = sinc(b_j - b_k)/a on R")


def _integrand(spec, j, k):
    weight = spec.metric.weight
    total = 0
    for fj, fk in zip(spec.functions[j], spec.functions[k]):
        total += (weight if weight is not None else 1) * fj * fk
        if spec.metric.sobolev:
            total += sum(sympy.diff(fj, t) * sympy.diff(fk, t) for t in spec.variables)
    return total


def expression_gram(spec):
    """Symbolic integrals (iterated over a box), else mpmath quadrature (docs/design.md,
    "Exact analysis")."""
    m, box = spec.basis_size, [(t, a, b) for t, (a, b) in zip(spec.variables, spec.intervals)]
    try:
        with time_limit(INTEGRATION_SECONDS, INTEGRATION):
            entries = {}
            for j in range(m):
                for k in range(j + 1):
                    value = _integrate(_integrand(spec, j, k), *box)
                    if value.has(sympy.Integral):
                        raise SymbolicLimitError("no closed form", limit=INTEGRATION)
                    if value.is_number and not value.is_finite and spec.dimension == 1:
                        _not_integrable(spec, j if j == k else None)
                        raise SymbolicLimitError("infinite entry", limit=INTEGRATION)
                    entries[j, k] = entries[k, j] = simplify_entry(value)
    except SymbolicLimitError as error:
        if error.limit != INTEGRATION:
            raise
        return _numerical_gram(spec), _numerical_method(spec)
    problem, wrong_at_defaults = _closed_form_problem(spec, entries)
    if wrong_at_defaults:
        return _numerical_gram(spec), f"{_numerical_method(spec)} ({problem})"
    if problem is not None:
        return (sympy.Matrix(m, m, lambda j, k: entries[j, k].subs(spec.defaults)),
                f"{AT_DEFAULTS}: symbolic integrals checked against mpmath there ({problem})")
    return sympy.Matrix(m, m, lambda j, k: entries[j, k]), (
        f"exact: symbolic integrals, each checked against mpmath quadrature to "
        f"1e-{CHECK_DIGITS} of sqrt(G_jj G_kk)")


def _numerical_method(spec):
    return (f"numerical: mpmath quadrature ({_cubature(spec)}) at {DIGITS} digits, at the "
            "default parameters")


def _closed_form_problem(spec, entries):
    """(why the closed forms cannot be used for every parameter value, or None; whether
    they are wrong at the defaults themselves): an entry disagrees with mpmath at the
    defaults (then cubature replaces them), or, with parameters, at the defaults times 3/2,
    or is piecewise in the parameters (Min, Max, Piecewise: SymPy's case split can be right
    at the defaults and wrong elsewhere); then G is used at the defaults only."""
    wrong = _disagreeing_entry(spec, entries)
    if wrong is not None:
        return f"SymPy's closed form of G[{wrong[0]}, {wrong[1]}] disagreed with mpmath", True
    if not spec.parameters:
        return None, False
    if any(v.has(sympy.Min, sympy.Max, sympy.Piecewise, sympy.Heaviside, sympy.sign)
           for v in entries.values()):
        return "the closed form is piecewise in the parameters", False
    moved = dataclasses.replace(spec, parameters=tuple(
        (symbol, value * sympy.Rational(3, 2)) for symbol, value in spec.parameters))
    wrong = _disagreeing_entry(moved, entries)
    if wrong is not None:
        return (f"SymPy's closed form of G[{wrong[0]}, {wrong[1]}] disagreed with mpmath at "
                "the parameters times 3/2"), False
    return None, False


def _disagreeing_entry(spec, entries):
    """The first (j, k) whose closed form, at the default parameters, differs from mpmath
    quadrature (_quad) by more than 10^-CHECK_DIGITS sqrt(G_jj G_kk), the entry's
    Cauchy-Schwarz scale; None when all agree. SymPy can return a wrong closed form (0 for
    some positive integrands over a box); where the quadrature's own error estimate is
    larger, the difference must exceed ten times that estimate."""
    with mpmath.workdps(CHECK_DIGITS + 10):
        quad = {(j, k): _quad(spec, _integrand(spec, j, k), CHECK_DIGITS)
                for j, k in sorted(key for key in entries if key[0] >= key[1])}
        for (j, k), (value, error) in sorted(quad.items(), key=lambda item: item[0][::-1]):
            tolerance = mpmath.mpf(10) ** -CHECK_DIGITS * mpmath.sqrt(
                abs(quad[j, j][0] * quad[k, k][0]))
            closed = mpmath.mpmathify(sympy.N(entries[j, k].subs(spec.defaults),
                                              CHECK_DIGITS + 10))
            if abs(closed - value) > tolerance + 10 * error:
                return j, k
    return None


def _pole_abscissae(expression, spec, a, b):
    """Real parts, strictly inside (a, b), of the roots of the denominator of a rational
    ``expression`` in the variable (numerical; none for other expressions)."""
    t = spec.variable
    denominator = sympy.denom(sympy.together(expression.subs(spec.defaults)))
    if not denominator.has(t) or not denominator.is_polynomial(t):
        return []
    try:
        roots = sympy.Poly(denominator, t).sqf_part().nroots(maxsteps=500)
    except mpmath.libmp.libhyper.NoConvergence:
        return []
    abscissae = [mpmath.mpf(str(sympy.re(r))) for r in roots]
    return [x for x in abscissae if a < x < b]


def _cubature(spec):
    """tanh-sinh in 1-D and for a weight singular on the box's boundary (robust to end
    singularities); Gauss-Legendre over a box otherwise (far faster in 2-D/3-D)."""
    if spec.dimension == 1:
        return "tanh-sinh"
    return "tanh-sinh" if weight_singularities(spec) else "gauss-legendre"


def _quad(spec, expression, digits):
    """(value, error estimate) of the integral of ``expression`` (at the default parameters)
    over the domain by _cubature: in 1-D split at the real parts of its poles inside the
    interval (tanh-sinh then converges at a narrow peak) and at the basis's breakpoints; over a box by Gauss-Legendre,
    again on 4^k sub-boxes (4 equal parts per variable) when the whole box's error
    estimate exceeds 10^-digits of the value."""
    method = _cubature(spec)
    function = sympy.lambdify(spec.variables, expression.subs(spec.defaults), "mpmath")
    box = [_split(*_mp_interval(spec, interval)) for interval in spec.intervals]
    if spec.dimension == 1:
        ends = box[0]
        kinks = [mpmath.mpf(b.p) / b.q for b in breakpoints(spec)]
        box = [sorted(set(ends) | set(_pole_abscissae(expression, spec, ends[0], ends[-1]))
                      | set(kinks))]
    value, error = mpmath.quad(function, *box, method=method, error=True)
    if method == "gauss-legendre" and not error <= mpmath.mpf(10) ** -digits * abs(value):
        box = [mpmath.linspace(a, b, 5) for a, b in box]
        value, error = mpmath.quad(function, *box, method=method, error=True)
    return value, error


def _mp_interval(spec, interval=None):
    def value(e):
        if e in (sympy.oo, -sympy.oo):
            return mpmath.inf if e > 0 else -mpmath.inf
        return mpmath.mpf(sympy.Float(sympy.N(e.subs(spec.defaults), DIGITS + 10), DIGITS + 10)._mpf_)
    return [value(e) for e in (interval or spec.interval)]


def _numerical_gram(spec):
    """mpmath quadrature (_cubature): tanh-sinh maps +-oo to a finite interval and is
    robust to integrable endpoint singularities, at twice DIGITS because a node at distance
    d from an end carries only (precision - log10 1/d) digits of d (Gauss-Legendre over a
    box: DIGITS + 10). Each diagonal entry is first checked for integrability (1-D)."""
    m = spec.basis_size
    method = _cubature(spec)   # over a box Gauss-Legendre, its errors checked
    entries, errors = {}, {}
    with mpmath.workdps(2 * DIGITS if method == "tanh-sinh" else DIGITS + 10):
        for j in range(m if spec.dimension == 1 else 0):
            _not_integrable(spec, j)
        for j in range(m):
            for k in range(j + 1):
                value, errors[j, k] = _quad(spec, _integrand(spec, j, k), DIGITS)
                entries[j, k] = entries[k, j] = sympy.Float(value, DIGITS)
        if method == "gauss-legendre":
            _check_cubature(spec, entries, errors)
    return sympy.Matrix(m, m, lambda j, k: entries[j, k])


def _check_cubature(spec, entries, errors):
    """Refuse a Gram matrix over a box whose cubature error estimate exceeds 10^-CHECK_DIGITS
    of an entry's scale sqrt(G_jj G_kk) (a peak or a singularity the rule does not
    resolve): a wrong Gram matrix would make the projection expansive."""
    for (j, k), error in sorted(errors.items()):
        scale = mpmath.sqrt(abs(mpmath.mpf(entries[j, j]) * mpmath.mpf(entries[k, k])))
        if not error <= mpmath.mpf(10) ** -CHECK_DIGITS * scale:
            raise SpecError([("basis.functions", f"the Gram matrix has no closed form and "
                                                 f"cubature cannot integrate G[{j}, {k}] to "
                                                 f"1e-{CHECK_DIGITS} of its scale over the box "
                                                 f"(error estimate {mpmath.nstr(error, 3)}: "
                                                 "a sharp peak or a singularity?)")],
                            spec.path)


def _split(a, b):
    """Integration points: finite intervals as they are, infinite ones cut at 0 (+-1)."""
    if mpmath.isinf(a) and mpmath.isinf(b):
        return [a, 0, b]
    return [a, b]


def _not_integrable(spec, j):
    """Raise a one-line SpecError if basis function j is not square-integrable (naming the
    endpoint); do nothing when it is, or when j is None and no culprit is found."""
    candidates = range(spec.basis_size) if j is None else [j]
    a, b = _mp_interval(spec)
    for index in candidates:
        function = sympy.lambdify(spec.variable, _integrand(spec, index, index).subs(spec.defaults),
                                  "mpmath")
        for end, other, shown in ((a, b, spec.interval[0]), (b, a, spec.interval[1])):
            if _diverges(function, end, other):
                key = "basis.family" if spec.family else f"basis.functions[{index}]"
                raise SpecError([(key, f"{basis_names(spec)[index]} is not square-integrable "
                                       f"near t = {shown}")], spec.path)


def _diverges(function, end, other):
    """Integrals over dyadic windows shrinking to a finite ``end`` (growing to +-oo) shrink
    geometrically when the integral converges; equal or growing ones mean divergence."""
    with mpmath.workdps(30):
        if mpmath.isinf(end):
            sign = 1 if end > 0 else -1
            windows = [(sign * mpmath.mpf(2) ** n, sign * mpmath.mpf(2) ** (n + 1)) for n in (24, 40)]
        else:
            toward = 1 if other > end else -1
            width = min(abs(other - end) / 2, 1)
            windows = [(end + toward * width * mpmath.mpf(2) ** -(n + 1),
                        end + toward * width * mpmath.mpf(2) ** -n) for n in (24, 40)]
        try:
            tails = [abs(mpmath.quad(function, sorted(w))) for w in windows]
        except (ZeroDivisionError, ValueError, OverflowError):
            return True
    return not all(mpmath.isfinite(v) for v in tails) or 0 < 0.9 * tails[0] <= tails[1]


def separable_atom_gram(spec, atoms):
    """(W, method): W_ab = int psi_a psi_b w over the box for a separable weight, the
    product over variables of the 1-D weighted Legendre Gram matrices (Fubini), or None."""
    factors = weight_factors(spec)
    if factors is None:
        return None
    sizes = [max(a[i] for a in atoms.index) + 1 for i in range(spec.dimension)]
    parts = [weighted_legendre_gram(weight_axis_spec(spec, i, f), n)
             for i, (f, n) in enumerate(zip(factors, sizes))]
    index = atoms.index
    gram = sympy.Matrix(len(index), len(index), lambda a, b: sympy.Mul(
        *(w[index[a][i], index[b][i]] for i, (w, _) in enumerate(parts))))
    names = [str(t) for t in spec.variables]
    methods = "; ".join(f"w_{n} = {f}: {m}" for n, f, (_, m) in zip(names, factors, parts))
    numerical = any(m.startswith("numerical") for _, m in parts)
    return gram, (f"{'numerical' if numerical else 'exact'}: separable weight w = "
                  + " ".join(f"w_{n}({n})" for n in names)
                  + ", int psi_a psi_b w = prod_i int L_(a_i) L_(b_i) w_i dx_i (Fubini); "
                  + methods)
