// The model state's blocks (core/model.c zeroed_floats): zeroed, aligned, and
// when a block is at least one huge page, every byte of it up to the last in
// memory marked for transparent huge pages. A tail left in 4 KB pages
// streamed 100 times slower on the development VM (model.c says why), so the
// test reads the kernel's own account, /proc/self/smaps, for the mapping that
// holds each block's last float. Prints one line per failed check and
// "N passed, N failed" last; exits 1 on any failure.
//
// Build: `make unit-tests` (target build/tests/test_memory-<compiler>);
// tests/test_units.py runs it.
#define _DEFAULT_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "../core/model.h"

static int passed, failed;

static void expect(const char *what, size_t n, int ok) {
    if (ok) {
        passed++;
    } else {
        failed++;
        printf("FAIL %s (block of %zu floats)\n", what, n);
    }
}

// Whether the mapping holding `address` carries the "hg" flag (MADV_HUGEPAGE);
// -1 when smaps cannot be read or has no such mapping.
static int marked_huge(const void *address) {
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f) return -1;
    char line[512];
    int inside = 0, found = -1;
    uintptr_t a = (uintptr_t)address;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
            inside = a >= lo && a < hi;
            continue;
        }
        if (inside && !strncmp(line, "VmFlags:", 8)) {
            found = strstr(line, " hg") != NULL;
            break;
        }
    }
    fclose(f);
    return found;
}

int main(void) {
    const size_t huge = (size_t)2 << 20, huge_floats = huge / sizeof(float);
    // the "hg" flag is the kernel's record of the advice, kept whatever THP's
    // mode; where THP is compiled out there is neither the sysfs file nor
    // the flag, so the marks are checked wherever the file exists
    int thp = access("/sys/kernel/mm/transparent_hugepage/enabled", F_OK) == 0;
    // below a huge page, exactly one, one float more, and d12's parameter count
    // (its tail is the 0.9 MB the rounding is for)
    const size_t sizes[] = {1000, huge_floats, huge_floats + 1, 124475904};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t n = sizes[i];
        void *block = NULL;
        float *p = zeroed_floats(n, &block);
        expect("allocated", n, p != NULL);
        if (!p) continue;
        int big = n * sizeof(float) >= huge;
        expect(big ? "starts on a 2 MB boundary" : "starts on a 64-byte boundary", n,
               (uintptr_t)p % (big ? huge : 64) == 0);
        expect("first and last floats zero", n, p[0] == 0.0f && p[n - 1] == 0.0f);
        p[n - 1] = 1.0f; // writable to the end
        if (big && thp) {
            expect("first float in memory marked for huge pages", n, marked_huge(p) == 1);
            expect("last float in memory marked for huge pages", n, marked_huge(p + n - 1) == 1);
        }
        free(block);
    }
    if (!thp) printf("note: no /sys/kernel/mm/transparent_hugepage/enabled; the huge-page marks were not checked\n");
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
