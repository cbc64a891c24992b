"""Stage 2 on a box I_1 x ... x I_k (paper Sec. 3.2, "Multivariate functions").

The Gram matrix is still m x m, its entries integrated over the box. A tensor-product
family has G = G_1 (x) ... (x) G_k (Fubini): each factor goes through the 1-D analysis and
L, D, R = L D^(1/2) and K are the Kronecker products of the factors' (unique LDL^T), so
nothing larger than a factor is factored. A total-degree polynomial space, or polynomial
functions, expand exactly in tensor Legendre atoms restricted to total degree; any other
basis gets iterated integrals (docs/design.md, "Exact analysis").
"""
import dataclasses
import itertools
import math

import mpmath
import numpy
import sympy

from sympy.calculus.util import continuous_domain

from .analysis import (Analysis, Atoms, Quadrature, _check_weight, _expression_gram,
                       _factorize, _frequency_and_degree, _legendre_rows, _legendre_space,
                       _polynomial_space, _weight_singularities, analyze,
                       verified_frequency, weighted_components,
                       weighted_legendre_gram)
from ..errors import SpecError
from .spec import Family, Metric, _family_functions, axis_families, family_size, multi_indices
from .symbolic import KroneckerMatrix, matrix_field


def analyze_box(spec, stage):
    """The exact analysis of a spec over a box (k > 1 variables)."""
    family, plain = spec.family, spec.metric.kind == "L2"
    factors = check_box_weight(spec)
    separable = plain or (factors is not None and not spec.metric.sobolev)
    if family is not None and family.option("total_degree") is None and separable:
        return _tensor(spec, stage, factors)
    polynomial = _is_polynomial_box(spec)
    if plain and polynomial:
        return _polynomial_space(spec, stage)
    if polynomial:
        atoms, mapping, gram, method = _legendre_space(spec)
    else:
        atoms, mapping = Atoms("expression", spec.basis_size), None
        gram, method = _expression_gram(spec)
    return _factorize(spec, gram, method, atoms, mapping, stage)


def _is_polynomial_box(spec):
    if spec.vector_basis or not all(e.is_finite for i in spec.intervals for e in i):
        return False
    if spec.family is not None:
        return spec.family.name in ("monomial", "legendre")
    return all(f[0].is_polynomial(*spec.variables) for f in spec.functions)


def axis_spec(spec, axis, family, weight=None):
    """The 1-D spec of one variable with a 1-D family (a tensor factor), in L2 with the
    weight factor of that variable (plain L2 without one)."""
    t, interval = spec.variables[axis], spec.intervals[axis]
    return dataclasses.replace(
        spec, name=f"{spec.name}_{t}", variable=t, interval=interval, variables=(t,),
        intervals=(interval,), family=family, vector_basis=False, value_dim=1,
        functions=tuple((f,) for f in _family_functions(family, t, interval)),
        metric=Metric(weight=None if weight in (None, 1) else weight), curve_interval=None)


def _tensor(spec, stage, weights=None):
    """G = (x)_i G_i and its LDL^T, R and K as Kronecker products of the 1-D factors', each
    factor in L2 with its variable's factor w_i of a separable weight (Fubini)."""
    weights = weights or (None,) * spec.dimension
    factors = tuple(analyze(axis_spec(spec, i, f, w)) for i, (f, w) in
                    enumerate(zip(axis_families(spec.family), weights)))
    stage("certificate")
    index = tuple(itertools.product(*(range(f.atoms.size) for f in factors)))
    atoms = (Atoms("legendre", len(index), tuple(f.atoms.shifts for f in factors), index)
             if factors[0].atoms.kind == "legendre" else
             Atoms("expression", len(index)))   # the tensor products in spec.functions
    pivots = tuple(sympy.Mul(*(f.pivots[a_i] for f, a_i in zip(factors, a)))
                   for a in multi_indices(spec.family))
    names = [str(t) for t in spec.variables]
    kappas = [f.condition_number for f in factors]
    kron = lambda name: KroneckerMatrix([getattr(f, name) for f in factors])  # noqa: E731
    return Analysis(
        spec=spec, gram=kron("gram"),
        gram_method=("numerical" if any(f.numerical for f in factors) else "exact")
                    + ": Kronecker product G = " + " (x) ".join(f"G_{n}" for n in names)
                    + " of the 1-D Gram matrices (Fubini); " + "; ".join(
                        f"G_{n}: {f.gram_method}" for n, f in zip(names, factors)),
        lower=kron("lower"), pivots=pivots,
        certificate=("L D L^T = (x)_i L_i (x)_i D_i (x)_i L_i^T, the unique LDL^T of G: every "
                     "pivot is a product of the factors' pivots, and "
                     + "; ".join(f"for {n}: {f.certificate}" for n, f in zip(names, factors))),
        cholesky=kron("cholesky"), transform=kron("transform"), atoms=atoms,
        quadrature=box_quadrature(spec, atoms),
        condition_number=(math.prod(kappas) if all(mpmath.isfinite(k) for k in kappas)
                          else mpmath.nan),
        numerical=any(f.numerical for f in factors),
        formulas=(("gram", "G = " + " (x) ".join(f"G_{n}" for n in names)),), factors=factors)


def tensor_legendre_expansion(spec):
    """(field, rows of C, norms, atoms): phi_j = sum_a C_ja prod_i P_(a_i)(u_i), exact.

    Atoms are the tensor grid of a tensor family, else the tensor Legendre polynomials of
    total degree <= D (x^a expands into P_b with b <= a componentwise, so |b| <= |a| <= D).
    """
    polys = (None if spec.family is not None else
             [sympy.Poly(f[0], *spec.variables) for f in spec.functions])
    coefficients = [c for p in polys or [] for c in p.coeffs()]
    field, elements = matrix_field([e for i in spec.intervals for e in i] + coefficients)
    ends = list(zip(elements[0:2 * spec.dimension:2], elements[1:2 * spec.dimension:2]))
    family = spec.family
    if family is not None and family.option("total_degree") is None:
        sizes = [family_size(f) for f in axis_families(family)]
        index = list(itertools.product(*(range(n) for n in sizes)))
    else:
        degree = (family.option("total_degree") if family is not None
                  else max(p.total_degree() for p in polys))
        sizes = [degree + 1] * spec.dimension
        index = [a for a in itertools.product(range(degree + 1), repeat=spec.dimension)
                 if sum(a) <= degree]
    position = {a: n for n, a in enumerate(index)}
    powers = [_legendre_rows(axis_spec(spec, i, Family("monomial", (("degree", n - 1),))),
                             field, a, b)[0] for i, (n, (a, b)) in enumerate(zip(sizes, ends))]

    def monomial(exponents, scale):
        row = {}
        for terms in itertools.product(*(p[e].items() for p, e in zip(powers, exponents))):
            key = position[tuple(b for b, _ in terms)]
            row[key] = row.get(key, field.zero) + scale * math.prod((v for _, v in terms),
                                                                    start=field.one)
        return row

    if polys is not None:
        rows = []
        for poly in polys:
            row = {}
            for exponents, c in poly.terms():
                for key, v in monomial(exponents, field.from_sympy(c)).items():
                    row[key] = row.get(key, field.zero) + v
            rows.append({k: v for k, v in row.items() if v})
    elif family.name == "legendre":
        rows = [{j: field.one} for j in range(len(index))]
    else:
        rows = [monomial(a, field.one) for a in multi_indices(family)]
    norms = [math.prod(((b - a) / field(2 * n + 1) for n, (a, b) in zip(multi, ends)),
                       start=field.one) for multi in index]
    return field, rows, norms, Atoms("legendre", len(index), index=tuple(index))


def _box_frequency_and_degree(expression, t, spec):
    """As analysis._frequency_and_degree in the variable t, with the rate of a function
    whose argument's t-derivative involves the other variables bounded over the box (sum
    of |coefficient| times the largest |monomial|, for a polynomial derivative); a rate
    with no such bound is a spec error, never a guess."""
    frequency, degree = _frequency_and_degree(expression, t)
    for node in sympy.preorder_traversal(expression):
        if isinstance(node, sympy.Function) and node.args:
            rate = sympy.diff(node.args[0], t)
            if not rate.is_number:
                frequency = max(frequency, _rate_bound(node, rate, t, spec))
    return frequency, degree


def _rate_bound(node, rate, t, spec):
    ends = [max(abs(float(sympy.N(e.subs(spec.defaults)))) for e in interval)
            for interval in spec.intervals]
    try:
        poly = sympy.Poly(rate, *spec.variables)
    except sympy.PolynomialError:
        poly = None
    if poly is None or not all(c.is_number for c in poly.coeffs()):
        raise SpecError([("basis.functions", f"no bound on how fast {node} oscillates in {t} "
                                             f"over the box (d/d{t} of its argument is "
                                             f"{rate}, not a polynomial in the variables)")],
                        spec.path)
    return float(sum(abs(c) * math.prod(b ** e for b, e in zip(ends, powers))
                     for powers, c in poly.terms()))


def weight_factors(spec):
    """The weight as a product w_1(x_1) ... w_k(x_k) of one-variable factors, found by
    SymPy and checked exactly (the constant factor goes into w_1), or None."""
    weight = spec.metric.weight
    if weight is None:
        return None
    signed = _signed_variables(spec)
    back = {v: t for t, v in signed.items()}
    local = weight.subs(signed)
    parts = sympy.separatevars(local, list(signed.values()), dict=True)
    if parts is None:
        return None
    factors = [parts.get(signed[t], sympy.Integer(1)) for t in spec.variables]
    factors[0] = parts["coeff"] * factors[0]
    if sympy.simplify(sympy.Mul(*factors) - local) != 0:
        return None
    return tuple(f.subs(back) for f in factors)


def _signed_variables(spec):
    """Each variable as a symbol that is positive (negative) where its interval is, at the
    defaults, within [0, oo) ((-oo, 0]): inside the box sqrt(x*y) = sqrt(x) sqrt(y) then
    holds and SymPy separates it; other variables stay as they are."""
    out = {}
    for t, (lo, hi) in zip(spec.variables, spec.intervals):
        lo, hi = (e.subs(spec.defaults) for e in (lo, hi))
        sign = {"positive": True} if lo >= 0 else {"negative": True} if hi <= 0 else {}
        out[t] = sympy.Symbol(t.name, real=True, **sign) if sign else t
    return out


def weight_axis_spec(spec, axis, factor):
    """The 1-D spec of one variable carrying the weight factor w_i (no basis functions)."""
    t, interval = spec.variables[axis], spec.intervals[axis]
    return dataclasses.replace(spec, variable=t, interval=interval, variables=(t,),
                               intervals=(interval,), functions=(), family=None,
                               metric=Metric(weight=factor), curve_interval=None)


def check_box_weight(spec):
    """The weight's factors when it separates, each continuous inside its interval and at
    worst ~ d^alpha, alpha > -1, at an end (checked as in 1-D; a singular factor needs a
    polynomial basis, whose module contracts one axis at a time); a weight that does not
    separate must be proven bounded on the closed box. Otherwise a one-line spec error."""
    if spec.metric.weight is None:
        return None
    _check_weight(spec)
    factors = weight_factors(spec)
    if factors is None:
        _check_bounded_weight(spec)
        return None
    for axis, factor in enumerate(factors):
        one = weight_axis_spec(spec, axis, factor.subs(spec.defaults))
        t, (lo, hi) = one.variable, (e.subs(spec.defaults) for e in one.interval)
        try:
            inside = continuous_domain(one.metric.weight, t, sympy.Interval.open(lo, hi))
        except (NotImplementedError, ValueError, TypeError):
            inside = None
        if inside != sympy.Interval.open(lo, hi):
            raise SpecError([("metric.weight", f"the factor {factor} of the weight "
                                               f"{spec.metric.weight} in {t} is "
                                               + ("not continuous inside" if inside is not None
                                                  else "not provably continuous inside")
                                               + f" [{lo}, {hi}]; a weight over a box must be "
                                               "bounded, or a product of one-variable factors "
                                               "singular at most at the ends of their interval"
                                               )], spec.path)
        singular = _weight_singularities(one)
        _check_bounded_ends(one, factor, [index for index, _ in singular])
        if singular and not _is_polynomial_box(spec):
            raise SpecError([("metric.weight", f"the factor {factor} of the weight is singular "
                                               f"at an end of [{lo}, {hi}]; a weight singular "
                                               "on the box's boundary needs a polynomial basis "
                                               "(a monomial or legendre family, or polynomial "
                                               "functions)")], spec.path)
    return factors


def _check_bounded_ends(one, factor, singular):
    """At an end where the factor is not ~ d^alpha, alpha < 0, it must have a finite limit
    (the module grades only power singularities: log(1/d) is refused, not integrated
    badly)."""
    t, s = one.variable, sympy.Symbol("s", positive=True)
    for index, end in enumerate(one.interval):
        if index in singular or not end.is_finite:
            continue
        local = one.metric.weight.subs(one.defaults).subs(
            t, end.subs(one.defaults) + (s if index == 0 else -s))
        try:
            value = sympy.limit(local, s, 0, "+")
        except (NotImplementedError, ValueError, TypeError):
            value = sympy.nan
        if not (value.is_number and value.is_finite):
            raise SpecError([("metric.weight", f"the factor {factor} of the weight in {t} has "
                                               f"no finite limit at {t} = {end} and does not "
                                               "behave like d^alpha there; expected a factor "
                                               "bounded, or ~ d^alpha with -1 < alpha < 0, at "
                                               "the ends of its interval")], one.path)


def weight_singularities(spec):
    """Per variable, the (end, alpha) where the factor w_i ~ d^alpha, alpha < 0, of a
    separable weight (as analysis.quadrature.singular in 1-D); () when nothing is singular."""
    factors = weight_factors(spec)
    if factors is None:
        return ()
    singular = tuple(_weight_singularities(weight_axis_spec(spec, axis, factor))
                     for axis, factor in enumerate(factors))
    return singular if any(singular) else ()


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


def box_quadrature(spec, atoms):
    """Gauss-Legendre nodes per axis and cell, exact for tensor Legendre atoms times a
    multilinear interpolant (degree a_i + 1 in x_i), also under H^1; for a weight, or
    expression atoms (also under H^1, whose derivative terms need only values), a frequency
    bound and smallest order per variable as in 1-D, for the user's expressions verified
    against mpmath axis by axis."""
    weighted = spec.metric.weight is not None
    if atoms.kind == "legendre" and not weighted:
        return Quadrature(exact_nodes=tuple((max(a[i] for a in atoms.index) + 3) // 2
                                            for i in range(spec.dimension)))
    if atoms.kind not in ("legendre", "expression"):
        return Quadrature()
    factors = weight_factors(spec) if weighted else None
    frequencies, orders = [], []
    for axis, (t, (lo, hi)) in enumerate(zip(spec.variables, spec.intervals)):
        rates = [_box_frequency_and_degree(c.subs(spec.defaults), t, spec)
                 for f in (spec.functions if atoms.kind == "expression" else ()) for c in f]
        rates.append((0.0, max(a[axis] for a in atoms.index) if atoms.kind == "legendre" else 0))
        weight = (_box_frequency_and_degree(
            (factors[axis] if factors else spec.metric.weight).subs(spec.defaults), t, spec)
            if weighted else (0.0, 0))
        length = float(sympy.N((hi - lo).subs(spec.defaults)))
        frequencies.append(max([1.0 / length, weight[0]] + [r for r, _ in rates]))
        orders.append((max(d for _, d in rates) + weight[1]) // 2 + 2)
    if atoms.kind == "expression" and spec.family is None:
        frequencies = _verified_frequencies(spec, frequencies, orders)
    return Quadrature(frequency=tuple(frequencies), min_nodes=tuple(orders),
                      singular=weight_singularities(spec) if factors else ())


_INTERVAL_FUNCTIONS = ("sqrt", "exp", "log", "cos", "sin", "pi", "e", "fabs")
BOUND_BOXES = 4096   # at most this many unproven sub-boxes per level, 12 levels


def _verified_frequencies(spec, frequencies, orders):
    """Per variable x_i, analysis.verified_frequency of the user's basis components times
    the weight as functions of x_i, the other variables at their ends and midpoints (3^(k-1)
    sections) and where the components peak most sharply (_peaked_sections): the module's
    tensor rule is one such 1-D rule per axis (numerical)."""
    expressions = weighted_components(spec)
    ends = [tuple(float(sympy.N(e.subs(spec.defaults))) for e in i) for i in spec.intervals]
    verified = []
    for axis, t in enumerate(spec.variables):
        others = [v for v in spec.variables if v != t]
        points = set(itertools.product(*((a, (a + b) / 2, b) for v, (a, b) in
                                         zip(spec.variables, ends) if v != t)))
        points |= _peaked_sections(spec.variables, expressions, axis, ends)
        sections = [e.subs(dict(zip(others, point))) for point in sorted(points)
                    for e in expressions]
        verified.append(verified_frequency(_distinct_sections(sections, t, ends[axis]), t,
                                           ends[axis], frequencies[axis], orders[axis],
                                           spec.path))
    return tuple(verified)


def _distinct_sections(sections, t, interval):
    """The sections worth verifying: not polynomials in t (the smallest order, from the
    degree, integrates those exactly), and one of each set equal up to a constant factor
    (the check is relative to each function's size), compared at 9 points to 1e-12."""
    nodes = [sympy.Float(interval[0] + (interval[1] - interval[0]) * (k + 0.5) / 9, 30)
             for k in range(9)]
    kept = {}
    for section in sections:
        if not section.has(t) or section.is_polynomial(t):
            continue
        values = [complex(sympy.N(section.subs(t, x), 20)) for x in nodes]
        top = max(values, key=abs)
        if top == 0 or not math.isfinite(abs(top)):
            kept[len(kept), None] = section
            continue
        kept.setdefault(tuple((round((v / top).real, 12), round((v / top).imag, 12))
                              for v in values), section)
    return list(kept.values())


def _peaked_sections(variables, expressions, axis, ends, count=2, nodes=33, samples=1025):
    """The ``count`` values of the other variables (on a grid of ``nodes`` per variable)
    where a component, as a function of x_i (``samples`` points), has the largest local
    frequency sqrt(|f''| / max |f|): about 1/distance to a pole, or an oscillation's rate
    (float64 finite differences, only to choose where mpmath verifies the rules)."""
    grids = [numpy.linspace(a, b, samples if i == axis else nodes)
             for i, (a, b) in enumerate(ends)]
    mesh = numpy.meshgrid(*grids, indexing="ij")
    step = (ends[axis][1] - ends[axis][0]) / (samples - 1)
    worst = numpy.zeros([1 if i == axis else nodes for i in range(len(ends))])
    for expression in expressions:
        with numpy.errstate(all="ignore"):
            values = numpy.real(numpy.broadcast_to(
                sympy.lambdify(variables, expression, "numpy")(*mesh), mesh[0].shape))
            curvature = numpy.abs(numpy.diff(values, 2, axis=axis)) / step ** 2
            size = numpy.max(numpy.abs(values), axis=axis, keepdims=True)
            rate = numpy.sqrt(numpy.max(curvature, axis=axis, keepdims=True) / size)
        worst = numpy.fmax(worst, numpy.nan_to_num(rate, nan=0.0, posinf=0.0))
    others = [g for i, g in enumerate(grids) if i != axis]
    flat = numpy.squeeze(worst, axis=axis).reshape(-1)
    return {tuple(float(g[j]) for g, j in zip(others, numpy.unravel_index(n, [nodes] * len(
        others)))) for n in numpy.argsort(flat)[::-1][:count] if flat[n] > 0}


def _check_bounded_weight(spec):
    """A weight that does not separate must be bounded on the closed box (modules integrate
    it by Gauss rules without grading): proven by interval arithmetic (mpmath.iv, outward
    rounding) on sub-boxes halved where no finite bound is found; a weight that is singular
    somewhere on the box, or whose bound is not found, is a one-line spec error."""
    weight = spec.metric.weight.subs(spec.defaults).replace(
        lambda e: e.is_Pow and not e.exp.is_Integer,
        lambda e: sympy.exp(e.exp * sympy.log(e.base)))
    modules = [{name: getattr(mpmath.iv, name) for name in _INTERVAL_FUNCTIONS}
               | {"Abs": mpmath.iv.fabs, "E": mpmath.iv.e}]
    uncovered = sorted({type(f).__name__ for f in weight.atoms(sympy.Function)}
                       - set(_INTERVAL_FUNCTIONS) - {"Abs"})
    if uncovered:
        raise SpecError([("metric.weight", f"the weight {spec.metric.weight} does not separate "
                                           f"and contains {', '.join(uncovered)}, which the "
                                           "proof of boundedness on the box (interval "
                                           "arithmetic) does not cover; expected a weight "
                                           "built from +, -, *, /, powers, sqrt, exp, log, "
                                           "sin, cos and abs, or a product of one-variable "
                                           "factors")], spec.path)
    function = sympy.lambdify(spec.variables, weight, modules=modules)
    boxes = [tuple(_enclosure(interval, spec) for interval in spec.intervals)]
    for _ in range(12):
        boxes = [b for b in boxes if not _bounded(function, b)]
        if not boxes or len(boxes) > BOUND_BOXES:
            break
        boxes = [halves for b in boxes for halves in itertools.product(*(
            ((i.a, i.mid), (i.mid, i.b)) for i in b))]
        boxes = [tuple(mpmath.iv.mpf([lo, hi]) for lo, hi in b) for b in boxes]
    if boxes:
        near = ", ".join(f"{float(i.mid):.6g}" for i in boxes[0])
        raise SpecError([("metric.weight", f"the weight {spec.metric.weight} does not separate "
                                           "into one-variable factors and has no finite bound "
                                           f"on the box near ({near}); expected a weight "
                                           "bounded on the closed box, or a product "
                                           "w_1(x_1)...w_k(x_k) of factors singular at most "
                                           "at the ends of their intervals")], spec.path)


def _enclosure(interval, spec):
    lo, hi = (mpmath.iv.mpf(str(sympy.N(e.subs(spec.defaults), 30))) for e in interval)
    return mpmath.iv.mpf([lo.a, hi.b])


def _bounded(function, box):
    """Whether interval arithmetic bounds the weight on ``box`` (a finite upper end)."""
    try:
        value = function(*box)
    except (ValueError, TypeError, ZeroDivisionError, NameError, mpmath.libmp.ComplexResult):
        return False
    return isinstance(value, mpmath.ctx_iv.ivmpf) and mpmath.isfinite(value.b) or (
        not isinstance(value, mpmath.ctx_iv.ivmpf) and mpmath.isfinite(value))
