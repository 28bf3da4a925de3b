/* A step of one process's wall clock, for the network test bed's `clock` fault: preloaded into an
 * agent (LD_PRELOAD), it adds the offset in seconds written in the file $ARCUS_WALLCLOCK_FILE
 * ("+3600", "-600", "+0"; re-read at most every 100 ms) to every reading of CLOCK_REALTIME, and
 * takes it off again from every absolute CLOCK_REALTIME deadline the process hands the kernel, so
 * that a wait for "1 s from now" still lasts 1 s. Monotonic clocks and their timers are left alone.
 *
 * Why not libfaketime (Debian's 0.9.10): it shifts absolute timerfd deadlines by the offset even
 * with FAKETIME_DONT_FAKE_MONOTONIC=1, so libdispatch's CLOCK_MONOTONIC timers (every Swift
 * Task.sleep) fire at once after a forward step and 10 minutes late after a 10-minute backward
 * one; and its setenv("FAKETIME_SHARED") at load moves `environ`, where the Swift runtime finds
 * argv on Linux, so the agent started with no arguments.
 *
 * Built by Tools/network/hosts.py into the run's directory: cc -shared -fPIC -O2 wallclock.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define NS 1000000000LL

static _Atomic int64_t offset_ns;
static _Atomic int64_t next_read_ns = 0; /* CLOCK_MONOTONIC */
static _Atomic unsigned char realtime_timerfd[4096];

static int (*real_clock_gettime)(clockid_t, struct timespec *);

static void resolve(void) {
    if (!real_clock_gettime) real_clock_gettime = dlsym(RTLD_NEXT, "clock_gettime");
}

static int64_t current_offset(void) {
    resolve();
    struct timespec m;
    real_clock_gettime(CLOCK_MONOTONIC, &m);
    int64_t now = m.tv_sec * NS + m.tv_nsec;
    if (now >= atomic_load(&next_read_ns)) {
        atomic_store(&next_read_ns, now + 100 * 1000000LL);
        const char *path = getenv("ARCUS_WALLCLOCK_FILE");
        int saved = errno;
        int fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;
        if (fd >= 0) {
            char text[64];
            ssize_t n = read(fd, text, sizeof text - 1);
            close(fd);
            if (n > 0) {
                text[n] = 0;
                char *end;
                long long seconds = strtoll(text, &end, 10);
                if (end != text) atomic_store(&offset_ns, seconds * NS);
            }
        }
        errno = saved;
    }
    return atomic_load(&offset_ns);
}

static int is_realtime(clockid_t clock) {
    return clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE;
}

static struct timespec shifted(struct timespec t, int64_t by) {
    int64_t ns = t.tv_sec * NS + t.tv_nsec + by;
    struct timespec out = { .tv_sec = ns / NS, .tv_nsec = ns % NS };
    if (out.tv_nsec < 0) { out.tv_nsec += NS; out.tv_sec -= 1; }
    return out;
}

/* Readings. */

int clock_gettime(clockid_t clock, struct timespec *tp) {
    resolve();
    int r = real_clock_gettime(clock, tp);
    if (r == 0 && is_realtime(clock)) *tp = shifted(*tp, current_offset());
    return r;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
    static int (*real)(struct timeval *, void *);
    if (!real) real = dlsym(RTLD_NEXT, "gettimeofday");
    int r = real(tv, tz);
    if (r == 0) {
        struct timespec t = shifted((struct timespec){ tv->tv_sec, tv->tv_usec * 1000 }, current_offset());
        tv->tv_sec = t.tv_sec;
        tv->tv_usec = t.tv_nsec / 1000;
    }
    return r;
}

time_t time(time_t *out) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    if (out) *out = t.tv_sec;
    return t.tv_sec;
}

int timespec_get(struct timespec *ts, int base) {
    if (base != TIME_UTC) return 0;
    return clock_gettime(CLOCK_REALTIME, ts) == 0 ? base : 0;
}

/* Absolute CLOCK_REALTIME deadlines, computed from shifted readings: back to the real clock. */

static const struct timespec *real_deadline(const struct timespec *fake, struct timespec *buffer) {
    if (!fake) return fake;
    *buffer = shifted(*fake, -current_offset());
    return buffer;
}

int sem_timedwait(sem_t *restrict sem, const struct timespec *restrict abstime) {
    static int (*real)(sem_t *, const struct timespec *);
    if (!real) real = dlsym(RTLD_NEXT, "sem_timedwait");
    struct timespec b;
    return real(sem, real_deadline(abstime, &b));
}

int sem_clockwait(sem_t *restrict sem, clockid_t clock, const struct timespec *restrict abstime) {
    static int (*real)(sem_t *, clockid_t, const struct timespec *);
    if (!real) real = dlsym(RTLD_NEXT, "sem_clockwait");
    struct timespec b;
    return real(sem, clock, is_realtime(clock) ? real_deadline(abstime, &b) : abstime);
}

/* glibc keeps a condition variable's clock in bit 1 of __wrefs (set by pthread_condattr_setclock). */
int pthread_cond_timedwait(pthread_cond_t *restrict cond, pthread_mutex_t *restrict mutex,
                           const struct timespec *restrict abstime) {
    static int (*real)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);
    if (!real) real = dlvsym(RTLD_NEXT, "pthread_cond_timedwait", "GLIBC_2.3.2"); /* not the 2.2.5 one */
    if (!real) real = dlsym(RTLD_NEXT, "pthread_cond_timedwait"); /* other architectures' versions */
    struct timespec b;
    int monotonic = (atomic_load_explicit((_Atomic unsigned int *)&cond->__data.__wrefs, memory_order_relaxed) & 2) != 0;
    return real(cond, mutex, monotonic ? abstime : real_deadline(abstime, &b));
}

int pthread_cond_clockwait(pthread_cond_t *restrict cond, pthread_mutex_t *restrict mutex, clockid_t clock,
                           const struct timespec *restrict abstime) {
    static int (*real)(pthread_cond_t *, pthread_mutex_t *, clockid_t, const struct timespec *);
    if (!real) real = dlsym(RTLD_NEXT, "pthread_cond_clockwait");
    struct timespec b;
    return real(cond, mutex, clock, is_realtime(clock) ? real_deadline(abstime, &b) : abstime);
}

int pthread_mutex_timedlock(pthread_mutex_t *restrict mutex, const struct timespec *restrict abstime) {
    static int (*real)(pthread_mutex_t *, const struct timespec *);
    if (!real) real = dlsym(RTLD_NEXT, "pthread_mutex_timedlock");
    struct timespec b;
    return real(mutex, real_deadline(abstime, &b));
}

int clock_nanosleep(clockid_t clock, int flags, const struct timespec *request, struct timespec *remain) {
    static int (*real)(clockid_t, int, const struct timespec *, struct timespec *);
    if (!real) real = dlsym(RTLD_NEXT, "clock_nanosleep");
    struct timespec b;
    int absolute = (flags & TIMER_ABSTIME) && is_realtime(clock);
    return real(clock, flags, absolute ? real_deadline(request, &b) : request, remain);
}

int timerfd_create(int clock, int flags) {
    static int (*real)(int, int);
    if (!real) real = dlsym(RTLD_NEXT, "timerfd_create");
    int fd = real(clock, flags);
    if (fd >= 0 && fd < 4096) atomic_store(&realtime_timerfd[fd], is_realtime(clock));
    return fd;
}

int timerfd_settime(int fd, int flags, const struct itimerspec *new_value, struct itimerspec *old_value) {
    static int (*real)(int, int, const struct itimerspec *, struct itimerspec *);
    if (!real) real = dlsym(RTLD_NEXT, "timerfd_settime");
    if ((flags & TFD_TIMER_ABSTIME) && new_value && fd >= 0 && fd < 4096 && atomic_load(&realtime_timerfd[fd])
        && (new_value->it_value.tv_sec || new_value->it_value.tv_nsec)) {
        struct itimerspec v = *new_value;
        v.it_value = shifted(v.it_value, -current_offset());
        return real(fd, flags, &v, old_value);
    }
    return real(fd, flags, new_value, old_value);
}
