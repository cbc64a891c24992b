"""The auditor (docs/design.md, "Auditing"): the black box (blackbox.py), white-box
conformance of the noise law (conformance.py), batched runs of the adaptive algorithms
(batched.py), the mutants that measure its power (mutants.py) and the tables (suite.py)."""
