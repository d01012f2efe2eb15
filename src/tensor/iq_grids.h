// The codebooks of the IQ1…IQ3 formats (part of the GGUF format, as ggml's grids define them).
// Entry i holds one grid point: the magnitudes of 8 (IQ1, IQ2) or 4 (IQ3) consecutive values,
// element j in byte j, as the decoders and dot kernels load it.
#pragma once

#include <array>
#include <bit>
#include <cstdint>

namespace k3::tensor {

extern const std::array<uint64_t, 256> kIq2xxsGrid;  // magnitudes 8, 25, 43 (units of 1/8)
extern const std::array<uint64_t, 512> kIq2xsGrid;
extern const std::array<uint64_t, 1024> kIq2sGrid;
extern const std::array<uint32_t, 256> kIq3xxsGrid;  // magnitudes 4, 12, …, 52, 62
extern const std::array<uint32_t, 512> kIq3sGrid;    // magnitudes 1, 3, …, 15
extern const std::array<uint64_t, 2048> kIq1sGrid;   // int8 values −1, 0, 1

// The same grids as level indices, the form the quantisation search works in: the level
// (0, 1, 2 for the 2-bit grids and IQ1, 0..7 for IQ3) of element j in bits [b·j, b·j + b),
// b = 2 or 3; entry i is grid point i above.
extern const std::array<uint16_t, 256> kIq2xxsLevelCodes;
extern const std::array<uint16_t, 512> kIq2xsLevelCodes;
extern const std::array<uint16_t, 1024> kIq2sLevelCodes;
extern const std::array<uint16_t, 256> kIq3xxsLevelCodes;
extern const std::array<uint16_t, 512> kIq3sLevelCodes;
extern const std::array<uint16_t, 2048> kIq1sLevelCodes;

// IQ2 and IQ3_XXS store the signs of 8 values in 7 bits: bit j set means value j is negative,
// and the implied eighth bit makes the number of negative values even.
constexpr uint8_t iq_signs_from_7_bits(unsigned bits) {
    return uint8_t(bits | unsigned(std::popcount(bits) & 1) << 7);
}
// The same as a table, for the unpacking loops.
inline constexpr std::array<uint8_t, 128> kIqSignsFrom7Bits = [] {
    std::array<uint8_t, 128> table{};
    for (unsigned bits = 0; bits < 128; ++bits) table[bits] = iq_signs_from_7_bits(bits);
    return table;
}();

// The δ IQ1_S and IQ1_M add to every grid value (±, by a stored bit): x = d·(g ± 1/8).
inline constexpr float kIq1Delta = 0.125f;

}  // namespace k3::tensor
