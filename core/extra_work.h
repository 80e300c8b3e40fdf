// Test-only deliberate extra work, for the harness's check that `perfstudy regress --metric
// instructions` sees a small slowdown of one kernel. A build with
//   -DPERFSTUDY_EXTRA_WORK_KERNEL=gelu_fwd -DPERFSTUDY_EXTRA_WORK_PERMILLE=20
// makes that kernel (gelu_fwd or gelu_bwd, step.c's names of the operation kinds) repeat the
// first 20/1000 of its loop's elements after the loop, writing the same values again: about 2%
// more instructions in that kernel, and none in any other (the kernel name is compared at compile
// time). Only tests/harness/test_instructions.py passes these flags; the Makefile never does, so
// the normal build has no trace of this.
#ifndef EXTRA_WORK_H
#define EXTRA_WORK_H

#include <stddef.h>

#if defined(PERFSTUDY_EXTRA_WORK_KERNEL) && defined(PERFSTUDY_EXTRA_WORK_PERMILLE)
#define EXTRA_WORK_STR_(x) #x
#define EXTRA_WORK_STR(x) EXTRA_WORK_STR_(x)
// How many of a loop's n elements kernel `kind` repeats: a compile-time 0 for every other kernel.
#define EXTRA_WORK_ELEMENTS(kind, n)                                                            \
    (__builtin_strcmp(EXTRA_WORK_STR(PERFSTUDY_EXTRA_WORK_KERNEL), kind) == 0                   \
         ? (size_t)(n) * (size_t)(PERFSTUDY_EXTRA_WORK_PERMILLE) / 1000u                         \
         : (size_t)0)
#endif

#endif
