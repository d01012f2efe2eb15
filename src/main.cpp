#include <malloc.h>

#include "cli/commands.h"

int main(int argc, char** argv) {
    // A forward pass allocates its activations afresh, megabytes a layer in prefill. Kept in the
    // heap when freed, rather than mapped per allocation and returned to the kernel, they cost no
    // page faults in the next pass: prefill +10% on the bench mock (2 threads, Zen 4).
    mallopt(M_MMAP_THRESHOLD, 64 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
    return k3::cli::run_main(argc, argv);
}
