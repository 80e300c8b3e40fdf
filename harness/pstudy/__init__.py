"""pstudy: the Python side of the GPT-2 performance study (sweeps, statistics, figures)."""
