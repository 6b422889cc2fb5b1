"""Evaluation: run or import model predictions on a benchmark release and score them with the papers' protocols."""
