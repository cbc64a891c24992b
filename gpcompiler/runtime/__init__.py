"""What a generated module carries at run time, written as ordinary tested Python: exact
lattice noise (exact.py). The emitter inlines these sources verbatim, with their hash."""
