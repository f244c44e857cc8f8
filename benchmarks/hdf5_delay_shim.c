/*
 * hdf5_delay_shim.c: LD_PRELOAD library that makes ONE function of the HDF5
 * library slower by a known factor: a planted regression in one code path.
 * Used by benchmarks/h5paths_noise.py (--shim); never part of the suite's checks.
 *
 * The function is chosen when building (-DDELAYED=name, default H5T_convert,
 * HDF5's internal entry to every datatype conversion: it is reached only when
 * the memory and file types differ, never for a no-op conversion). Each call is
 * timed and followed by a wait of H5REGRESS_DELAY_FRACTION x its own duration
 * (1.0 doubles the time spent in the function), plus H5REGRESS_DELAY_US
 * microseconds per call.
 *
 * Interposition works on HDF5's internal functions because libhdf5.so calls them
 * through its PLT (GCC's default semantic interposition; `objdump -d libhdf5.so |
 * grep 'call.*<H5T_convert@plt>'` shows the call sites). The wrapper forwards
 * eight integer or pointer arguments and an integer result, which covers
 * H5T_convert's signature in 1.14 (hids) and 1.15/2.0 (H5T_t pointers) on x86-64
 * and aarch64; do not use it on a function with floating-point arguments or more
 * than eight.
 *
 * Build: gcc -shared -fPIC -O2 -o hdf5_delay_shim.so hdf5_delay_shim.c -ldl
 *        [-DDELAYED=H5Dwrite]
 * Use:   LD_PRELOAD=$PWD/hdf5_delay_shim.so H5REGRESS_DELAY_FRACTION=1 mpirun ... h5paths ...
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "delay_common.h"

#ifndef DELAYED
#define DELAYED H5T_convert
#endif
#define STR_(x) #x
#define STR(x) STR_(x)

typedef long (*fn8_t)(long, long, long, long, long, long, long, long);

static double fraction = -1.0;
static long fixed_us = 0;
static fn8_t real = NULL;

static void init(void)
{
    read_delay_settings(&fraction, &fixed_us);
    real = (fn8_t)dlsym(RTLD_NEXT, STR(DELAYED));
    if (!real) {
        fprintf(stderr, "hdf5_delay_shim: %s not found after the shim: %s\n", STR(DELAYED),
                dlerror());
        abort();
    }
}

static void delay(double elapsed)
{
    double d = delay_seconds(elapsed, fraction, fixed_us);
    if (d <= 0.0)
        return;
    /* spin: the conversions last micro- to milliseconds, below nanosleep's slack */
    spin_until(now() + d);
}

long DELAYED(long a, long b, long c, long d, long e, long f, long g, long h)
{
    if (!real)
        init();
    double t0 = now();
    long r = real(a, b, c, d, e, f, g, h);
    delay(now() - t0);
    return r;
}
