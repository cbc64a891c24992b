"""The figures of `privatize --plot` and `cdf --plot`: releases of curves and
fields, with declared units, as PNG."""
import io
import math
import textwrap

import numpy

from ..errors import UserError


def field_figure(module, fields, axes, values, compare, title, shown=4):
    """Heat maps of the first ``shown`` released fields of two variables on the public grid
    (2-vector values: their length, with arrows; n > 2: the first component); with compare,
    the first input field too, labelled "not private". All panels share one colour scale."""
    pyplot = load_pyplot()
    n = module.VALUE_DIM
    panels = [(f"field {field.id}: release", axes, numpy.asarray(v).reshape(
        tuple(a.size for a in axes) + (n,))) for field, v in zip(fields, values)][:shown]
    if len(fields) > shown:
        title += f"\n(the first {shown} of {len(fields)} fields)"
    if compare:
        field = fields[0]
        panels.insert(0, (f"field {field.id}: input data (not private)", field.grids,
                          field.values.reshape(field.values.shape[:2] + (n,))))
    figure, axis_list = pyplot.subplots(1, len(panels), figsize=(5.5 * len(panels), 4.5),
                                        squeeze=False, layout="constrained")
    label = {1: "value", 2: "length of the value"}.get(n, f"component 1 of {n}")
    shown = [numpy.hypot(v[..., 0], v[..., 1]) if n == 2 else v[..., 0] for _, _, v in panels]
    low, high = min(v.min() for v in shown), max(v.max() for v in shown)  # one colour scale
    for axis, (name, grid, value), shown_value in zip(axis_list[0], panels, shown):
        nodal = shown_value.shape == (grid[0].size, grid[1].size)
        mesh = axis.pcolormesh(grid[0], grid[1], shown_value.T, vmin=low, vmax=high,
                               shading="gouraud" if nodal else "flat")
        if n == 2:
            _arrows(axis, grid, value, nodal)
        axis.set_title(name)
        domain, values = module.UNITS["domain"], module.UNITS["values"]
        if domain[0] == domain[1]:  # one unit on both axes: the box's true shape
            axis.set_aspect("equal", adjustable="box")
        axis.set_xlabel(f"{module.VARIABLES[0]} ({domain[0] or 'spec units'})")
        axis.set_ylabel(f"{module.VARIABLES[1]} ({domain[1] or 'spec units'})")
        figure.colorbar(mesh, ax=axis, label=f"{label} ({values or 'data units'})")
    figure.suptitle("\n".join(textwrap.fill(line, 60 * len(panels))
                               for line in title.splitlines()))
    return figure


def _arrows(axis, grid, value, nodal, count=16):
    """The 2-vector values as arrows on at most count x count nodes (or cell centres)."""
    centres = [g if nodal else (g[:-1] + g[1:]) / 2 for g in grid]
    keep = [numpy.unique(numpy.linspace(0, c.size - 1, min(count, c.size)).astype(int))
            for c in centres]
    x, y = numpy.meshgrid(centres[0][keep[0]], centres[1][keep[1]], indexing="ij")
    v = value[numpy.ix_(keep[0], keep[1])]
    axis.quiver(x, y, v[..., 0], v[..., 1], color="white", alpha=0.8)


def check_plot(path):
    """--plot: a writable .png path, and matplotlib installed (checked before any noise)."""
    from ..io.curves import check_writable
    if path is None:
        return
    check_writable(path)    # first: a directory is named as one
    if not path.lower().endswith(".png"):
        raise UserError(f"--plot {path}: expected a .png file name")
    load_pyplot()


def load_pyplot():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UserError("plotting needs matplotlib: pip install 'gpcompiler[plot]'") from None
    return plt


def png(figure):
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=120)
    load_pyplot().close(figure)
    return buffer.getvalue()


# One colour and one dash per curve sharing an axis: qualitative colours, no grey (grey is
# the true data); the dashes keep identical releases visible on top of each other.
PALETTE = ("C1", "C0", "C2", "C3", "C4")
DASHES = ("-", (0, (5, 3)), (0, (1, 2)), (0, (8, 3, 1, 3)), (0, (3, 3, 1, 3, 1, 3)))


SHARED_AXIS = len(PALETTE)  # up to this many curves share one axis; more: small multiples


MAX_PANELS = 100    # small multiples of more curves show the first MAX_PANELS


def with_unit(name, unit):
    """An axis label: ``name (unit)``, unless ``name`` already states its unit."""
    return f"{name} ({unit})" if unit and "(" not in name else name


def _curve_labels(curves, units):
    """(x label, y label) of curve plots: the data's labels, with the spec's declared units
    (``units``: the module's UNITS) where the data's do not state them."""
    labels = curves.value_labels or curves.value_names
    values = units.get("values") if units else None
    if curves.values[0].ndim == 2:
        return with_unit(labels[0], values), with_unit(labels[1], values)
    domain = (units.get("domain") or (None,))[0] if units else None
    return with_unit(curves.time_label, domain), with_unit(labels[0], values)


def release_figure(curves, releases, grids, title, compare=False, units=None):
    """The releases on their public grids (two-component curves as paths in the plane),
    axes labelled with their units; with ``compare`` the true curves beneath them (then
    the title says "not private"). Up to SHARED_AXIS curves share one axis, one colour
    each (its true curve faded in that colour); more are small multiples on shared axes,
    one curve per panel (the first MAX_PANELS). The legend is outside the data."""
    title += "\nnot private: shows the true data" if compare else ""
    if len(curves.ids) > SHARED_AXIS:
        return _small_multiples(curves, releases, grids, title, compare, units)
    plane = curves.values[0].ndim == 2
    figure, axis = load_pyplot().subplots(figsize=(8.5, 6) if plane else (11, 4.5),
                                      layout="constrained")
    several = len(curves.ids) > 1
    for key, t, y, release, grid, colour, dash in zip(curves.ids, curves.times, curves.values,
                                                      releases, grids, PALETTE, DASHES):
        if compare:
            axis.plot(*_path(t, y, plane), lw=2.4, color=colour if several else "0.6",
                      alpha=0.35 if several else 1.0, zorder=1)
        axis.plot(*_path(grid, numpy.asarray(release.evaluate(grid)), plane), lw=0.9,
                  color=colour, linestyle=dash, label=f"private release: {key}" if several
                  else "private release", zorder=2)
        _breakpoints(axis, release, plane, colour)
    _label_axes(axis, curves, units, plane)
    axis.set_title(title, fontsize=9)
    handles, names = axis.get_legend_handles_labels()
    if compare:
        handles.insert(0, load_pyplot().Line2D([], [], lw=2.4, color="0.6",
                                           alpha=0.35 if several else 1.0))
        names.insert(0, "original (true data)" + (", faded in its release's colour"
                                                  if several else ""))
    axis.legend(handles, names, fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1),
                borderaxespad=0)
    return figure


def _breakpoints(axis, release, plane, colour):
    """The released breakpoints of a piecewise release (seg, unbounded): markers on the
    release where its pieces meet (both sides of a jump)."""
    breakpoints = release.record.get("breakpoints")
    if breakpoints is None:
        return
    points = numpy.asarray(breakpoints, dtype=float)
    named = any(line.get_label() == "released breakpoints" for line in axis.lines)
    axis.plot(*_path(points, numpy.asarray(release.evaluate(points)), plane), "o", ms=3.5,
              color=colour, zorder=3, label="_nolegend_" if named else "released breakpoints")


def _path(t, y, plane):
    return (y[:, 0], y[:, 1]) if plane else (t, y)


def _label_axes(axis, curves, units, plane):
    x_label, y_label = _curve_labels(curves, units)
    axis.set_xlabel(x_label)
    axis.set_ylabel(y_label)
    if plane:
        axis.set_aspect("equal", adjustable="datalim")
    elif curves.seconds_per_unit:
        scale = curves.seconds_per_unit
        axis.secondary_xaxis("top", functions=(lambda x: x * scale, lambda s: s / scale)
                             ).set_xlabel("time (s)")


def _small_multiples(curves, releases, grids, title, compare, units):
    """One panel per curve (the first MAX_PANELS) on shared axes: the release over its
    true curve in grey; one legend to the right of the panels."""
    pyplot = load_pyplot()
    shown = min(len(curves.ids), MAX_PANELS)
    columns = math.ceil(math.sqrt(shown))
    rows = math.ceil(shown / columns)
    plane = curves.values[0].ndim == 2
    figure, axes = pyplot.subplots(rows, columns, sharex=True, sharey=True, squeeze=False,
                                   figsize=(min(14, 2.2 * columns + 1.2),
                                            min(12.5, 1.6 * rows + 1.8)), layout="constrained")
    for axis, key, t, y, release, grid in zip(axes.flat, curves.ids, curves.times,
                                              curves.values, releases, grids):
        if compare:
            axis.plot(*_path(t, y, plane), lw=1.6, color="0.65", zorder=1)
        axis.plot(*_path(grid, numpy.asarray(release.evaluate(grid)), plane), lw=0.7,
                  color="C1", zorder=2)
        _breakpoints(axis, release, plane, "C1")
        axis.set_title(str(key), fontsize=7, pad=2)
        axis.tick_params(labelsize=6)
        if plane:
            axis.set_aspect("equal", adjustable="box")
    for axis in axes.flat[shown:]:
        axis.set_visible(False)
    x_label, y_label = _curve_labels(curves, units)
    figure.supxlabel(x_label, fontsize=9)
    figure.supylabel(y_label, fontsize=9)
    if len(curves.ids) > shown:
        title += f"\n(the first {shown} of {len(curves.ids)} curves)"
    figure.suptitle(title, fontsize=9)
    handles = [pyplot.Line2D([], [], lw=0.7, color="C1")]
    names = ["private release (one curve per panel)"]
    if compare:
        handles.append(pyplot.Line2D([], [], lw=1.6, color="0.65"))
        names.append("original (true data)")
    figure.legend(handles, names, loc="outside right center", fontsize="small",
                  frameon=False)
    return figure
