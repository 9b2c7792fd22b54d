// How the CPU kernels ask GCC for vector code that still runs anywhere. Internal to herd::kernels.
#pragma once

// HERD_VECTORISED compiles a function twice, for AVX2+FMA and for baseline x86-64, and picks one at
// load time. The AVX2+FMA clone is "arch=x86-64-v3": GCC 12 picks it by ISA level. "arch=haswell"
// would be picked only on Intel Haswell itself (it tests the CPU model; an AMD EPYC got the
// baseline clone), and "avx2,fma" makes one clone per feature. No -march=native: the build machine
// is not the run machine.
// ThreadSanitizer crashes at start-up on ifunc resolvers (they run during relocation, before
// its runtime is ready), so TSan builds get the baseline code only.
#if defined(__SANITIZE_THREAD__)
#define HERD_VECTORISED
#else
#define HERD_VECTORISED __attribute__((target_clones("arch=x86-64-v3", "default")))
#endif

// For loops whose output may be the same array as an input: each element is read before it is
// written at the same index, so iterations stay independent and the loop needs no alias check.
#if defined(__clang__)
#define HERD_ITERATIONS_INDEPENDENT _Pragma("clang loop vectorize(assume_safety)")
#else
#define HERD_ITERATIONS_INDEPENDENT _Pragma("GCC ivdep")
#endif
