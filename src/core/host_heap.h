// Host tensor memory comes from malloc. A forward or training step frees and
// re-allocates the same large activations every time; glibc would hand each
// one back to the kernel (mmap / heap trimming) and take it again, and every
// fresh page then faults and is zeroed (~15% of a CPU training step).
#pragma once

namespace forge {

// Once per process, before the first host tensor: keeps freed blocks up to
// 1 GiB in the heap for reuse (M_MMAP_THRESHOLD, M_TRIM_THRESHOLD). A no-op
// outside glibc.
void keep_freed_host_memory();

}  // namespace forge
