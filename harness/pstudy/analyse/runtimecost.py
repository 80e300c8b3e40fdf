"""What a variant's runtime costs each task beyond its kernel (RuntimeOverheads): measured between
the chunks of its traces, or fitted from its 1-thread runs."""

from pstudy.store import vocabulary
from pstudy.analyse.chunktimes import median, config_point
from pstudy.analyse.stepreplay import predict_point


MIN_OVERHEAD_CONFIGS = 2  # traced configurations a variant's runtime cost is fitted from, at least


class RuntimeOverheads:
    """What a variant's runtime costs each task beyond its kernel, fitted from the variant's 1-thread
    runs (runtime_overheads). At one thread nothing waits and nothing runs beside, so a measured
    step is its chunks' traced times plus what happens between them (taking the next task,
    releasing its successors, a barrier, reading the clock and writing the trace record): per
    traced configuration c with a measured 1-thread step S_c, its replay R_c (the chunk times
    alone) and n_c tasks a step, S_c - R_c = n_c x delta + noise. The noise of a median step is
    taken as proportional to the step, so delta is the weighted least-squares fit, weights
    (n_c / S_c)^2: many short tasks in a short step tell more than a long step whose gap is within
    its noise. A variant gets a cost only from at least MIN_OVERHEAD_CONFIGS configurations (one
    run's noise would pass for a cost), and a negative fit (noise) counts as 0."""

    def __init__(self, gaps, traced=None):
        self.gaps = gaps  # {config key: (S_c - R_c, n_c, S_c)}
        self.traced = traced or {}  # {config key: seconds per task measured in its traces}

    def of(self, variant, leave_out=None, config=None):
        """Seconds per task of `variant`: `config`'s own, measured in its traces, where it has one;
        else the median of the variant's traced configurations'; else fitted from the measured steps
        without `leave_out`'s configuration (a point is validated against a cost not fitted from
        itself)."""
        if config in self.traced:
            return max(0.0, self.traced[config])
        own = [c for ck, c in self.traced.items() if ck.variant == variant]
        if own:
            return max(0.0, median(own))
        fit = [g for ck, g in self.gaps.items() if ck.variant == variant and ck != leave_out]
        if len(fit) < MIN_OVERHEAD_CONFIGS:
            return 0.0
        weighted = sum(gap * n / step ** 2 for gap, n, step in fit)
        weight = sum((n / step) ** 2 for _, n, step in fit)
        return max(0.0, weighted / weight)

    def configurations(self, variant):
        """How many measured configurations of `variant` the fit has."""
        return sum(ck.variant == variant for ck in self.gaps)

    def variants(self):
        """{variant: seconds per task} over every configuration, in the variants' order."""
        names = sorted({ck.variant for ck in (*self.gaps, *self.traced)}, key=vocabulary.variant_order)
        return {v: self.of(v) for v in names}

    def line(self):
        """One line for the output: each variant's cost, where it comes from, or why it has none."""
        parts = []
        for v, cost in self.variants().items():
            if any(ck.variant == v for ck in self.traced):
                parts.append(f"{v} {1e6 * cost:.2f} us (traced)")
            elif self.configurations(v) >= MIN_OVERHEAD_CONFIGS:
                parts.append(f"{v} {1e6 * cost:.2f} us (fitted)")
            else:
                parts.append(f"{v} none (no trace with two iterations to measure it, and fitted from "
                             f"{MIN_OVERHEAD_CONFIGS} configurations at least; it has {self.configurations(v)})")
        return ("runtime cost per task (at 1 thread, added to every task): "
                + (", ".join(parts) or "no measured 1-thread point"))


def runtime_overheads(graphs, medians, measured, source, traced=None):
    """RuntimeOverheads of the traced configurations of `medians` that have a measured 1-thread step
    in `measured`, replayed on `source` (the machine they were measured on), with the costs
    measured in the traces (`traced`, TraceStats.costs) where there are some."""
    gaps = {}
    measured_variants = {ck.variant for ck in traced or {}}
    for ck in sorted(medians, key=vocabulary.point_sort_key):
        # a variant measured in its traces needs no fit (and its 1-thread replays are skipped)
        if vocabulary.is_distributed(ck.variant) or ck.variant in measured_variants:
            continue
        step = measured.get(config_point(ck, 1))
        if not step or step <= 0:
            continue
        replayed, _ = predict_point(graphs, medians, ck, 1, source, source)
        gaps[ck] = (step - replayed, graphs.get(ck, 1).n_tasks, step)
    return RuntimeOverheads(gaps, traced)
