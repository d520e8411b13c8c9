/* Callgrind's client requests as plain C functions, for ctypes (pytest-ormbench).
 *
 * The requests are inline machine-code sequences that valgrind recognises; outside valgrind
 * they do nothing. Built on first use against the system's <valgrind/callgrind.h>.
 */
#include <valgrind/callgrind.h>

int ormbench_on_valgrind(void) { return RUNNING_ON_VALGRIND; }

void ormbench_start(void) {
    CALLGRIND_ZERO_STATS;
    CALLGRIND_START_INSTRUMENTATION;
}

void ormbench_stop(void) { CALLGRIND_STOP_INSTRUMENTATION; }

void ormbench_dump(const char *label) { CALLGRIND_DUMP_STATS_AT(label); }
