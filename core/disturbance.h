// What disturbed the process from outside it, read at one instant: the host's
// steal time, all CPUs together (/proc/stat's eighth value, in clock ticks, so
// 10 ms steps where USER_HZ is 100), and the process's involuntary context
// switches (getrusage). A step's share is the difference of two readings
// (bench/clock_reads times one). Negative: not readable.
#ifndef DISTURBANCE_H
#define DISTURBANCE_H

typedef struct {
    double steal_s;
    long involuntary_switches;
} Disturbance;

void disturbance_now(Disturbance *d);

#endif
