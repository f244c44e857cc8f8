/*
 * delay_common.h: what both LD_PRELOAD shims of the benchmarks (delay_shim.c,
 * hdf5_delay_shim.c) do alike: read the delay asked for from the environment, keep
 * a monotonic clock and wait by spinning. Included rather than linked, so that each
 * shim stays one gcc command (the compiler finds it beside the shim's source).
 */
#ifndef H5REGRESS_DELAY_COMMON_H
#define H5REGRESS_DELAY_COMMON_H

#include <stdlib.h>
#include <time.h>

/* H5REGRESS_DELAY_FRACTION (unset or negative: 0) and H5REGRESS_DELAY_US (unset: 0) */
static void read_delay_settings(double *fraction, long *fixed_us)
{
    const char *f = getenv("H5REGRESS_DELAY_FRACTION");
    const char *u = getenv("H5REGRESS_DELAY_US");
    *fraction = f ? atof(f) : 0.0;
    if (*fraction < 0.0)
        *fraction = 0.0;
    *fixed_us = u ? atol(u) : 0;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* the wait after a call that lasted elapsed seconds */
static double delay_seconds(double elapsed, double fraction, long fixed_us)
{
    return elapsed * fraction + fixed_us * 1e-6;
}

/* busy-wait until the clock reaches end: exact where a sleep's slack would not be */
static void spin_until(double end)
{
    while (now() < end)
        ;
}

#endif
