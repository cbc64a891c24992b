"""Stage 4: :class:`ModuleIR` -> Python source of a standalone NumPy module.

The output is byte-reproducible: no timestamps, no absolute paths, entries in sorted
order, floats printed with ``repr`` from values rounded once from the exact value.
"""
from ...runtime import cdfterms, entropy, exact
from .box import box_placeholders
from .common import (SECTION, common_placeholders, entry_index, fill_template, provenance,
                     read_template)
from .literals import python_text
from .line import line_placeholders
from .runtime import bound_once, runtime_source


def emit_module(ir):
    """Return the source text of the generated module for ``ir``; over a box, the marked
    sections of module.py.tmpl are replaced by those of module_box.py.tmpl."""
    if ir.box is None:
        return bound_once(fill_template("module.py.tmpl", line_placeholders(ir)))
    return bound_once(fill_template(
        "module.py.tmpl", {**common_placeholders(ir), **box_placeholders(ir)},
        dict(SECTION.findall(read_template("module_box.py.tmpl")))))


def emit_cdf_module(ir):
    """Return the source text of a generated CDF-table module."""
    def table(entries):
        return "\n".join(f"    ({entry_index(e)}, {e.code}),  # {python_text(e.exact)}"
                         for e in entries)
    return bound_once(fill_template("cdf_module.py.tmpl", {
        **provenance(ir), "degree": str(ir.degree), "size": str(ir.degree + 1),
        "lo": ir.lo[0], "hi": ir.hi[0], "lo_exact": python_text(ir.lo[1]),
        "hi_exact": python_text(ir.hi[1]),
        "moment_sensitivity_squared": ir.moment_sensitivity_squared,
        "moment_sensitivity": ir.sensitivities[0], "coefficient_sensitivity": ir.sensitivities[1],
        "moment_error": ir.mean_errors[1], "coefficient_error": ir.mean_errors[0],
        "alpha": table(ir.alpha), "beta": table(ir.beta),
        "moment_matrix": table(ir.moment_matrix), "offset": table(ir.offset),
        "runtime": runtime_source(entropy, exact, cdfterms),
    }))
