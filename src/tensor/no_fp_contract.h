// Included by the quantizers' .cpp files: bit-exact agreement with ggml needs every a*b+c
// rounded twice, as ggml-base (built without FMA) rounds it, whatever flags the project uses.
#pragma once

#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif
