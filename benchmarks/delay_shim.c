/*
 * delay_shim.c: LD_PRELOAD library that makes writes slower by a known factor.
 * Used by the benchmarks (calibrate.py --real, real_pairs.py) and by the stand-in
 * candidate of `ci/nightly --inject-slowdown` to inject a true slowdown into
 * real runs; never part of the suite's checks.
 *
 * Each intercepted write or flush call (write, pwrite, writev, fsync,
 * fdatasync) is timed and followed by a sleep of H5REGRESS_DELAY_FRACTION x
 * its own duration (e.g. 0.111 turns every write into 1.111x its time: a
 * ~10 % bandwidth loss on write-bound runs). Flushes are delayed too because
 * a run that ends in fsync spends much of its write time there.
 * H5REGRESS_DELAY_US adds a fixed delay per call on top.
 *
 * Build: gcc -shared -fPIC -O2 -o delay_shim.so delay_shim.c -ldl
 * Use:   LD_PRELOAD=$PWD/delay_shim.so H5REGRESS_DELAY_FRACTION=0.111 fio ...
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static double fraction = -1.0;
static long fixed_us = 0;

static void init(void)
{
    if (fraction >= 0.0)
        return;
    const char *f = getenv("H5REGRESS_DELAY_FRACTION");
    const char *u = getenv("H5REGRESS_DELAY_US");
    fraction = f ? atof(f) : 0.0;
    if (fraction < 0.0)
        fraction = 0.0;
    fixed_us = u ? atol(u) : 0;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void delay(double elapsed)
{
    double d = elapsed * fraction + fixed_us * 1e-6;
    if (d <= 0.0)
        return;
    struct timespec ts;
    ts.tv_sec = (time_t)d;
    ts.tv_nsec = (long)((d - (double)ts.tv_sec) * 1e9);
    /* spin for short delays: nanosleep's overshoot (timer slack, ~50-100 us)
     * would dominate and make the injected slowdown larger than asked */
    if (d < 2e-3) {
        double end = now() + d;
        while (now() < end)
            ;
        return;
    }
    nanosleep(&ts, NULL);
}

#define WRAP(ret, name, params, args)                                   \
    ret name params                                                     \
    {                                                                   \
        static ret (*real) params = NULL;                               \
        if (!real)                                                      \
            real = (ret (*) params)dlsym(RTLD_NEXT, #name);             \
        init();                                                         \
        double t0 = now();                                              \
        ret r = real args;                                              \
        delay(now() - t0);                                              \
        return r;                                                       \
    }

WRAP(ssize_t, write, (int fd, const void *buf, size_t n), (fd, buf, n))
WRAP(ssize_t, pwrite, (int fd, const void *buf, size_t n, off_t off), (fd, buf, n, off))
WRAP(ssize_t, pwrite64, (int fd, const void *buf, size_t n, off_t off), (fd, buf, n, off))
WRAP(ssize_t, writev, (int fd, const struct iovec *iov, int cnt), (fd, iov, cnt))
WRAP(ssize_t, pwritev, (int fd, const struct iovec *iov, int cnt, off_t off),
     (fd, iov, cnt, off))
WRAP(int, fsync, (int fd), (fd))
WRAP(int, fdatasync, (int fd), (fd))
