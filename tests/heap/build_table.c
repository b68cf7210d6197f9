/* Loaded by python3 through ctypes (tests/heap/heap.sh): a named function
 * that builds a large structure, 64 MiB in rows of 1 KiB. */
#include <stdlib.h>
#include <string.h>

void **build_table(int rows);

__attribute__((visibility("default"))) void **build_table(int rows)
{
    void **table = malloc((size_t)rows * sizeof *table);
    for (int i = 0; i < rows; i++) {
        table[i] = malloc(1024);
        memset(table[i], i, 1024);
    }
    return table;
}
