// Host tensor memory comes from malloc, with two adjustments for speed.
//
// Reuse: a forward or training step frees and re-allocates the same large
// activations every time; glibc would hand each one back to the kernel
// (mmap / heap trimming) and take it again, and every fresh page then faults
// and is zeroed (~15% of a CPU training step). Blocks of 2 MiB and more are
// also kept by size for the next request of that size (see host_heap.cpp).
//
// Huge pages: decode streams every weight once a token, so it is bound by
// memory bandwidth, and with 4 KiB pages by the TLB misses of that stream.
// On the 2-core EPYC this was measured on, a 512 MiB read with two threads
// ran at 26 GB/s on 4 KiB pages and 35 GB/s on 2 MiB pages. Blocks of
// 2 MiB and more are therefore aligned to 2 MiB and advised as huge
// (Linux's transparent huge pages in their default "madvise" mode).
#pragma once
#include <cstddef>

namespace forge {

// Once per process, before the first host tensor: keeps freed blocks up to
// 1 GiB in the heap for reuse (M_MMAP_THRESHOLD, M_TRIM_THRESHOLD). A no-op
// outside glibc.
void keep_freed_host_memory();

// Memory the system can still give (MemAvailable of /proc/meminfo), in
// bytes; 0 when unknown (not Linux).
double host_memory_available();

// `bytes` (> 0) of host memory, 64-byte aligned, on huge pages where the
// block is large and the system has them; nullptr when out of memory. A
// large block may be one freed before (release_host_bytes keeps them for
// reuse). Release with release_host_bytes and the same `bytes`.
std::byte* allocate_host_bytes(size_t bytes);
void release_host_bytes(std::byte* p, size_t bytes);

}  // namespace forge
