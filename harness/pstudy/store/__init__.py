"""What the harness reads and writes: configs and the sweep they describe, the results layout, traces, callgrind output, task graphs, machine files, the history."""
