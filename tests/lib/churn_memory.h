/* churn_memory.h: allocate and free blocks of every kind hakmem has (small,
 * medium, large pages and huge mappings), so that pages empty and memory
 * waits to be given back: what wakes an allocator's background purging. */
#ifndef TESTS_CHURN_MEMORY_H
#define TESTS_CHURN_MEMORY_H

/* `rounds` rounds of: 64 blocks of 100 KB, 2000 of 16 B-4 KiB, 200 of
 * 8 KiB, 4 of 2 MiB, each written, then all freed. */
void churn_memory(unsigned rounds);

/* Threads of this process, as /proc/self/task lists them (0 if unknown). */
unsigned count_tasks(void);

/* Sleep for ms milliseconds. */
void sleep_ms(unsigned ms);

#endif
