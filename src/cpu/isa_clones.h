// FORGE_ISA_CLONES marks a CPU kernel whose loops gain from wider vectors
// (the vm::exp loops above all): GCC compiles it for AVX-512 (x86-64-v4),
// AVX2 (x86-64-v3) and the baseline and picks one when the program loads;
// `flatten` inlines its helpers into each copy so that their loops vectorize
// for that ISA. Every copy rounds alike: the library is built with
// -ffp-contract=off (no FMA contraction) and vectorizing reorders nothing.
#pragma once

#if defined(__x86_64__) && defined(__linux__) && defined(__GNUC__) && !defined(__clang__)
#define FORGE_ISA_CLONES __attribute__((flatten, target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define FORGE_ISA_CLONES
#endif
