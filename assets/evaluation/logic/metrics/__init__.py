"""Similarity metrics, one per module, behind one registry."""
