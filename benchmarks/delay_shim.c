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
 * H5REGRESS_DELAY_LOG=FILE: at exit each process that delayed anything appends
 * one line to FILE, `delay_shim pid=P fraction=F calls=N io_s=T delay_s=D`
 * (T: the intercepted calls' own time, D: the delay added, as measured), so that a run
 * said to be slowed can be shown to have been (ci/nightly checks it).
 *
 * Build: gcc -shared -fPIC -O2 -o delay_shim.so delay_shim.c -ldl
 * Use:   LD_PRELOAD=$PWD/delay_shim.so H5REGRESS_DELAY_FRACTION=0.111 fio ...
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "delay_common.h"

static double fraction = -1.0;
static long fixed_us = 0;
/* totals for H5REGRESS_DELAY_LOG, in nanoseconds (atomic: MPI-IO may write from threads) */
static long n_calls = 0, io_ns = 0, delay_ns = 0;

static void init(void)
{
    if (fraction >= 0.0)
        return;
    read_delay_settings(&fraction, &fixed_us);
}

static void delay(double elapsed)
{
    double d = delay_seconds(elapsed, fraction, fixed_us);
    if (d <= 0.0)
        return;
    double start = now();
    /* spin for short delays: nanosleep's overshoot (timer slack, ~50-100 us)
     * would dominate and make the injected slowdown larger than asked */
    if (d < 2e-3) {
        spin_until(start + d);
    } else {
        struct timespec ts;
        ts.tv_sec = (time_t)d;
        ts.tv_nsec = (long)((d - (double)ts.tv_sec) * 1e9);
        nanosleep(&ts, NULL);
    }
    /* the delay as it happened (a loaded machine oversleeps), for the log */
    __atomic_fetch_add(&n_calls, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&io_ns, (long)(elapsed * 1e9), __ATOMIC_RELAXED);
    __atomic_fetch_add(&delay_ns, (long)((now() - start) * 1e9), __ATOMIC_RELAXED);
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

__attribute__((destructor)) static void log_totals(void)
{
    const char *path = getenv("H5REGRESS_DELAY_LOG");
    if (!path || n_calls == 0)
        return;
    char line[256];
    int n = snprintf(line, sizeof line,
                     "delay_shim pid=%ld fraction=%g calls=%ld io_s=%.6f delay_s=%.6f\n",
                     (long)getpid(), fraction, n_calls, io_ns * 1e-9, delay_ns * 1e-9);
    /* the raw system call: this library's own write() would delay and count it */
    int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_WRONLY | O_APPEND | O_CREAT, 0644);
    if (fd < 0 || n <= 0)
        return;
    syscall(SYS_write, fd, line, (size_t)n);
    syscall(SYS_close, fd);
}
