"""Analysing what was measured: statistics, comparisons, efficiency factors, the roofline and the verdict, prediction and its simulator, regression sessions."""
