"""A budget across days on the device (docs/reference/ledger.md, "Longitudinal model"):
a persisted ledger with a cap per UTC epoch, checked before any noise is drawn, and
memoized re-release: the same spec, budget and data return the stored release and
charge nothing (docs/threat-model.md, "Releases over days")."""
import base64
import contextlib
import fcntl
import hashlib
import json
import os
from fractions import Fraction

import numpy

from ..errors import UserError
from . import records

EPOCHS = ("day", "week")


class CapExceededError(UserError, ValueError):
    """A release would take the epoch's spend above the cap (nothing is drawn)."""


def digest(*arrays):
    """sha256 of float64 arrays (shape and bytes): the data's identity on the device."""
    hasher = hashlib.sha256()
    for array in arrays:
        array = numpy.ascontiguousarray(array, dtype=float)
        hasher.update(repr(array.shape).encode() + array.tobytes())
    return hasher.hexdigest()


def _write_private(path, text):
    """``text`` to ``path`` through path.tmp renamed over it, as private as the ledger:
    the folder 0700, the file 0600 (it holds the sha256 of the wearer's data)."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(os.path.dirname(path), 0o700)
    temporary = f"{path}.tmp"
    with contextlib.suppress(FileNotFoundError):   # a crash's leftover keeps its mode
        os.unlink(temporary)
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)


class DeviceLedger:
    """A ledger file ``path`` with ``cap`` per ``epoch`` ("day" or "week", UTC) in the
    model of each release, and its store of released values ``path``.releases/ (the only
    copy a memoized re-release returns). ``clock``: the current UTC time (tests inject it)."""

    def __init__(self, path, cap=None, epoch="day", clock=records.utc_now):
        if epoch not in EPOCHS:
            raise ValueError(f"epoch must be day or week, got {epoch!r}")
        if cap is not None and not (isinstance(cap, (int, float, Fraction)) and 0 < cap < float("inf")):
            raise ValueError(f"the cap must be a positive finite number, got {cap!r}")
        self.path, self.cap, self.epoch, self.clock = str(path), cap, epoch, clock

    @contextlib.contextmanager
    def locked(self):
        """An exclusive lock on the ledger file from the cap check to the append (two
        releases at once never both pass the check)."""
        descriptor = records.open_ledger(self.path, os.O_RDWR)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX)
            yield
        finally:
            os.close(descriptor)

    def _store(self, key):
        return os.path.join(f"{self.path}.releases", f"{key}.json")

    def stored(self, key):
        """The stored release of ``key`` (a memoized re-release), or None."""
        try:
            with open(self._store(key)) as handle:
                stored = json.load(handle)
        except FileNotFoundError:
            return None
        if "release_base64" in stored:  # a binary release file (.npz, .parquet)
            stored["release"] = base64.b64decode(stored.pop("release_base64"))
        return stored

    def spent(self, model):
        """The exact spend of this epoch in ``model``, whatever the metric (a device's budget
        is one budget): each record's cost times its ``count`` (every curve of a batch is
        the wearer's)."""
        now = records.epoch(self.clock(), self.epoch)
        counted = ("GP", "CGP") if model in ("GP", "CGP") else (model,)
        mine = [item for item in records.read(self.path) if item["model"] in counted
                and records.epoch(records.when(item), self.epoch) == now]
        if model in ("GP", "CGP"):
            return sum((records.in_model([item], model) * item["count"] for item in mine),
                       Fraction(0))
        return sum((records.cost(item) * item["count"] for item in mine), Fraction(0))

    def check(self, model, cost):
        """Refuse (one line: the cap and the spend) a release of ``cost`` (its curves'
        total) that would take this epoch's spend above the cap; a function of public
        values only."""
        if self.cap is None:
            return
        spent = self.spent(model)
        if spent + Fraction(cost) > Fraction(self.cap):
            raise CapExceededError(
                f"{self.path}: refused before any noise: the {model} cap {self.cap:g} per UTC "
                f"{self.epoch} ({records.epoch(self.clock(), self.epoch)}) is spent to "
                f"{float(spent):.6g} (exactly {spent}); this release costs {float(cost):.6g}")

    def commit(self, lines, key, release):
        """Charge ``lines`` (one append), then store ``release`` under ``key`` (with a cap:
        charged first, so a crash between them over-charges, never under-charges)."""
        records.append(self.path, lines)
        if self.cap is not None:
            kept = ({"release_base64": base64.b64encode(release).decode()}
                    if isinstance(release, bytes) else {"release": release})
            _write_private(self._store(key), json.dumps(
                {"key": key, "release_id": lines[0]["release_id"], "time": lines[0]["time"],
                 **kept}) + "\n")

    def release(self, key, model, cost, draw):
        """(release, charged): after the cap check (whether or not ``key`` is stored: a
        refusal depends on the public spend only), the stored release of ``key`` charging
        nothing, else ``draw()`` -> (release, records), charged and stored."""
        with self.locked():
            self.check(model, cost)
            if self.cap is not None:
                stored = self.stored(key)
                if stored is not None:
                    return stored["release"], False
            release, lines = draw()
            self.commit(lines, key, release)
            return release, True


def privatize_on_device(ledger, spec, t, y, *, epsilon=None, rho=None, bound=None, rng=None,
                        **params):
    """One curve through ``spec``'s Project-and-Privatize under ``ledger``'s cap:
    (released coefficients, charged). The same spec, budget, bound and curve (its sha256)
    return the stored release and charge nothing."""
    from ..adaptive.ledger import check_budget
    from ..adaptive.noise import release_scale
    from ..compiler.build import load, resolve_spec
    module = load(spec)
    model, budget = check_budget(epsilon, rho)
    values = {**module.PARAMETERS, **params}
    metric = records.metric_identity(resolve_spec(spec), values)
    key = records.sha256_json({"spec_sha256": module.SPEC_SHA256, "model": model,
                               "budget": repr(budget), "bound": repr(bound),
                               "parameters": {k: repr(v) for k, v in values.items()},
                               "curve": digest(t, y)})

    def draw():
        coefficients = module.project_and_privatize(t, y, epsilon=epsilon, rho=rho, rng=rng,
                                                    bound=bound, **params)
        facts = module.release_facts(epsilon=epsilon, rho=rho, bound=bound)
        line = records.record(
            label=f"device: {module.NAME}", model=model, metric=metric,
            spec={"name": module.NAME, "sha256": module.SPEC_SHA256}, cost=Fraction(budget),
            parameter=budget, noise=("spherical Laplace" if model == "GP" else "Gaussian",
                                     release_scale(model, budget)),
            lattice=facts["lattice"], bound=facts["bound"], slack=facts["slack"],
            time=ledger.clock())
        return coefficients.tolist(), [line]
    released, charged = ledger.release(key, model, Fraction(budget), draw)
    return numpy.asarray(released, dtype=float), charged
