"""Generators of hostile inputs (broken and odd cases) written at test time, one module per kind of input."""
