// The heap on transparent huge pages. Loading a schedule of millions of commands allocates
// millions of small objects; on the development VM every page fault is costly (a third of a 1M
// command load went to faults), and with glibc's malloc on huge pages (its tunable
// glibc.malloc.hugetlb=1) the load takes about 40 % less time. glibc reads the tunable only when
// a process starts, so the programs set it and run themselves again.
#pragma once

namespace npusim {

// Call first thing in main: unless GLIBC_TUNABLES already names glibc.malloc.hugetlb (then
// nothing happens, so it runs once, and a user's own setting wins: glibc.malloc.hugetlb=0 turns
// it off), adds glibc.malloc.hugetlb=1 and executes the program again with the same arguments:
// the same process (pid), a fresh heap. If that cannot be done, returns and the program runs on
// as it is. Without transparent huge pages (or with another libc) the setting does nothing.
void use_huge_pages_for_the_heap(char** argv);

}  // namespace npusim
