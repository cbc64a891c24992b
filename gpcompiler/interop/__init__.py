"""Interoperation with other functional-data tools (optional extras)."""
