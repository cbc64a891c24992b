"""Differentially private CDF estimation compiled from Legendre tables (second paper)."""
from .estimators import (METHODS, PrivateStatistics, Statistics, distances, estimate,
                         expected_l2_errors, legendre_cdf)
from .gaussian import analytic_gaussian_sigma
from .release import CDFEstimate
from .tables import cdf_tables

__all__ = ["estimate", "analytic_gaussian_sigma", "cdf_tables", "Statistics", "PrivateStatistics",
           "CDFEstimate", "METHODS", "distances", "expected_l2_errors", "legendre_cdf"]
