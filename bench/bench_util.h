/* Shared by the C benchmark programs: exit with evsparse's message when a call fails, and a
 * monotonic clock. Needs _POSIX_C_SOURCE >= 199309L before the first include. */
#ifndef EVS_BENCH_UTIL_H
#define EVS_BENCH_UTIL_H

#include <evsparse.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define EVS(call)                                                                              \
    do {                                                                                       \
        evs_status s_ = (call);                                                                \
        if (s_ != EVS_SUCCESS) {                                                               \
            fprintf(stderr, "%s: %s: %s\n", #call, evs_status_string(s_), evs_last_error());   \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)

/* Seconds on the monotonic clock. */
static inline double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

#endif
