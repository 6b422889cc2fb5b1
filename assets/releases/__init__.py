"""Releases: every dataset as a self-contained, publishable folder, and the guard that keeps benchmarks out of
training splits."""
