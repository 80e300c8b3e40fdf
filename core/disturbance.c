#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>
#include "disturbance.h"

void disturbance_now(Disturbance *d) {
    d->steal_s = -1.0;
    d->involuntary_switches = -1;
    FILE *f = fopen("/proc/stat", "r");
    if (f) {
        // cpu  user nice system idle iowait irq softirq steal ...
        unsigned long long v[8];
        long ticks = sysconf(_SC_CLK_TCK);
        if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
                   &v[6], &v[7]) == 8 && ticks > 0)
            d->steal_s = (double)v[7] / (double)ticks;
        fclose(f);
    }
    struct rusage usage;
    if (getrusage(RUSAGE_SELF, &usage) == 0) d->involuntary_switches = usage.ru_nivcsw;
}
