// The heap on transparent huge pages, and kept. Loading a schedule of millions of commands
// allocates millions of small objects; on the development VM every page fault is costly (a third
// of a 1M command load went to faults; first touching 400 MB takes 0.6 to 1.4 s there), and with
// glibc's malloc on huge pages (its tunable glibc.malloc.hugetlb=1) the load takes about 40 %
// less time. Memory freed is kept for the next allocation rather than given back to the system
// and faulted in again (glibc.malloc.mmap_threshold and trim_threshold at 4 GiB): that takes
// about a tenth off the 7B decoder layer's run and a fifth off ResNet-50's, at the same peak
// RSS. glibc reads the tunables only when a process starts, so the programs set them and run
// themselves again.
#pragma once

namespace npusim {

// A .preinit_array entry (sim/app/main.cpp: the loader calls it with the arguments and the
// environment the kernel passed): it then runs before the C library's and the shared libraries'
// constructors, which the first start would otherwise run for nothing (SystemC's alone clear 3 MiB:
// the second start took 24 ms of `npusim --version`'s 42, and takes 10 of 28 since). Unless the
// environment already names glibc.malloc.hugetlb in a GLIBC_TUNABLES entry (then nothing happens,
// so it runs once, and a user's own setting wins: glibc.malloc.hugetlb=0 turns it off), joins its
// GLIBC_TUNABLES entries into one, adds glibc.malloc.hugetlb=1 and the mmap and trim thresholds
// and the top pad the user did not set (there, or by their MALLOC_*_ names), and executes the
// program again with the same arguments: the same process (pid), a fresh heap. Not in a setuid,
// setgid or capability program (glibc drops the tunables there: it would run itself again for
// ever), nor when the dynamic loader was started by name (ld-linux.so ./npusim).
// It allocates nothing and keeps the new environment in static storage; if that cannot be done,
// it returns and the program runs on as it is. Without transparent huge pages (or with another
// libc) the settings do nothing. Under AddressSanitizer it returns at once.
void use_huge_pages_for_the_heap(int argc, char** argv, char** envp);

// Call first thing in a thread that allocates (parallel_map's helpers): when the heap is on huge
// pages as use_huge_pages_for_the_heap sets it up (GLIBC_TUNABLES holds glibc.malloc.hugetlb=1
// and its 4 GiB mmap threshold), puts this thread's malloc arena on them too. glibc 2.36 applies
// that tunable to the main arena only, so a helper's arena grew by 4 KiB page faults: ResNet-50's
// compile on `default` took 7,800 faults on two threads against 1,600 on one, and was no faster.
// It allocates a block, advises the kernel to back it with huge pages (madvise MADV_HUGEPAGE,
// which stays with the mapping) and frees it: the arena's later allocations come from those
// pages. The peak RSS grows by a few MiB (ResNet-50 on `default`: 63 to 66 MiB), as a huge page
// is resident whole. Best effort: nothing happens where that cannot be done, nor under
// AddressSanitizer (its own allocator).
void use_huge_pages_in_this_thread();

}  // namespace npusim
