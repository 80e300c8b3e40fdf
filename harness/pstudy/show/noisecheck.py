"""The noise study's check on the terminal (`perfstudy noise check`): per point, duty and period the
quiet step and the errors of the three predictions of it, the slowdown with its interval, then the
errors' means against the target and the machine's own floor (pstudy.analyse.noise)."""

import statistics

from pstudy.store import vocabulary


def pct(value, measured, width):
    return f"{'NA' if value is None else f'{100 * (value / measured - 1):+.1f}%':>{width}}"


def lines(rows, floor, target):
    out = [f"{'study':<12} {'duty':>4} {'period':>6} {'point':<34} {'quiet_s':>8} {'from quiet':>10} "
           f"{'disturbed wall':>14} {'disturbed CPU':>13} {'slowdown [95%]':>20} {'CPU vs quiet CPU':>16}"]
    for r in rows:
        interval = "" if r["low"] != r["low"] else f" [{r['low']:.2f}, {r['high']:.2f}]"
        out.append(f"{r['study']:<12} {r['duty']:>4g} {(r['period_us'] or 0) / 1000:>4g}ms "
                   f"{vocabulary.point_label(r['point']):<34} {r['measured']:>8.4f} "
                   f"{pct(r['quiet'], r['measured'], 10)} {pct(r['wall'], r['measured'], 14)} "
                   f"{pct(r['cpu'], r['measured'], 13)} {r['slowdown']:>7.2f}x{interval:<12} "
                   f"{'' if r['quiet_cpu'] is None else pct(r['cpu'], r['quiet_cpu'], 16)}")
    wall = [abs(r["wall"] / r["measured"] - 1) for r in rows if r["wall"] is not None]
    cpu = [abs(r["cpu"] / r["measured"] - 1) for r in rows]
    out.append(f"quiet steps predicted from the disturbed runs, |error| mean and largest: wall times "
               f"{100 * statistics.fmean(wall):.1f}% and {100 * max(wall):.1f}%, CPU times "
               f"{100 * statistics.fmean(cpu):.1f}% and {100 * max(cpu):.1f}% (target {100 * target:.0f}% at every "
               f"point; {sum(e <= target for e in cpu)} of {len(cpu)} points within it)")
    agree = [abs(r["cpu"] / r["quiet_cpu"] - 1) for r in rows if r["quiet_cpu"]]
    if agree:
        out.append(f"the CPU-time predictions from the disturbed and from the quiet runs differ by "
                   f"{100 * statistics.fmean(agree):.1f}% on the mean, {100 * max(agree):.1f}% at most "
                   "(both predict the machine undisturbed)")
    for study in sorted({f[0] for f in floor}):
        predicted = [f[2] for f in floor if f[0] == study and f[2] is not None]
        drift = [f[3] for f in floor if f[0] == study and f[3] is not None]
        if predicted and drift:
            out.append(f"{study}: the quiet rounds against each other (the machine's own floor): CPU-time "
                       f"prediction |error| mean {100 * statistics.fmean(predicted):.1f}%, largest "
                       f"{100 * max(predicted):.1f}% ({sum(e <= target for e in predicted)} of {len(predicted)} "
                       f"within {100 * target:.0f}%); measured medians {100 * statistics.fmean(drift):.1f}% apart on "
                       f"the mean, {100 * max(drift):.1f}% at most")
    return out
