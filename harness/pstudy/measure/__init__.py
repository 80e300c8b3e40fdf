"""Measuring: one run of a binary, Slurm jobs, ceilings, counters, the thief and valgrind runs, and the facts about machine, code and build."""
