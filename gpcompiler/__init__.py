"""gpcompiler: compile function spaces into geo-private mechanisms for functional data.

The public names are imported on first use (PEP 562), so that `gpcompiler --version` and
`--help` do not pay for SymPy."""
import importlib

__version__ = "0.1.0"

_EXPORTS = {"load": ".compiler.build", "priv_func_select": ".adaptive",
            "priv_func_seg": ".adaptive", "priv_func_unbounded": ".adaptive",
            "baseline_points": ".adaptive", "PrivacyLedger": ".adaptive",
            "evaluate": ".io.releases", "read_curves": ".io.curves", "Columns": ".io.curves",
            "timestamps_to_times": ".io.curves", "lonlat_to_metres": ".io.curves",
            "SpecError": ".errors", "NotPositiveDefiniteError": ".errors",
            "DataError": ".errors", "UserError": ".errors"}
__all__ = list(_EXPORTS)


def __getattr__(name):
    """A public name, imported from its module the first time it is asked for."""
    if name not in _EXPORTS:
        raise AttributeError(f"module 'gpcompiler' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name], __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))
