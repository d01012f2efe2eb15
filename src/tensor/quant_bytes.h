// Little-endian field access for the byte-array block structs of the quantized formats.
#pragma once

#include <cstdint>
#include <cstring>

#include "tensor/float_formats.h"

namespace k3::tensor {

inline float load_f16(const uint8_t* p) {
    uint16_t bits;
    std::memcpy(&bits, p, sizeof bits);
    return f16_to_f32(bits);
}
inline void store_f16(uint8_t* p, float value) {
    const uint16_t bits = f32_to_f16(value);
    std::memcpy(p, &bits, sizeof bits);
}
// Round-trips value through f16, as ggml does when it re-reads a scale it has just stored.
inline float round_to_f16(float value) { return f16_to_f32(f32_to_f16(value)); }

inline uint32_t load_u32(const uint8_t* p) {
    uint32_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
inline void store_u32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, sizeof v); }
inline uint16_t load_u16(const uint8_t* p) {
    uint16_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
inline void store_u16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, sizeof v); }

}  // namespace k3::tensor
