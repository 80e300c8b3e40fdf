"""Measuring: one run of a binary, Slurm jobs, ceilings, counters, the thief, the co-runner and valgrind runs, perfstudy's own subcommands as children, and the facts about machine, code and build."""
