#include "kernels/activation_quant.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <string>

#include "tensor/float_formats.h"
#include "util/error.h"

namespace k3::kernels {

namespace {

// _mm256_round_ps(nearest) then _mm256_cvtps_epi32: half to even; NaN and values outside the
// int32 range give INT32_MIN (x86's "integer indefinite").
int32_t round_like_x86(float v) {
    if (!(v >= -2147483648.0f && v < 2147483648.0f)) return INT32_MIN;
    return int32_t(std::nearbyint(v));  // the default rounding mode: nearest even
}

// The two saturating packs (epi32 -> epi16 -> epi8).
int8_t saturate_int8(int32_t v) { return int8_t(std::clamp(v, -128, 127)); }

// One Q8_0 block as the x86 build rounds it; returns Σ of the unsaturated levels (wrapping, as
// the SIMD lanes add), which Q8_1 stores.
int32_t quantize_block_q8_0(const float* x, uint16_t& d_bits, int8_t* qs) {
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    d_bits = tensor::f32_to_f16(d);
    uint32_t sum = 0;
    for (int j = 0; j < 32; ++j) {
        const int32_t q = round_like_x86(x[j] * id);
        sum += uint32_t(q);
        qs[j] = saturate_int8(q);
    }
    return int32_t(sum);
}

// ggml's nearest_int: round half to even by adding 1.5 · 2^23 (valid for |v| < 2^22).
int nearest_int(float v) {
    const float shifted = v + 12582912.0f;
    int32_t bits;
    std::memcpy(&bits, &shifted, 4);
    return (bits & 0x007fffff) - 0x00400000;
}

std::string misfit(ActivationFormat format, int64_t n) {
    return "a row of " + std::to_string(n) + " values is not a whole number of " + activation_format_name(format) +
           " blocks (" + std::to_string(activation_block_size(format)) + " values each)";
}

}  // namespace

void quantize_act_q8_0_scalar(const float* x, void* blocks, int64_t n) {
    auto* out = static_cast<ActBlockQ8_0*>(blocks);
    for (int64_t b = 0; b < n / 32; ++b) quantize_block_q8_0(x + 32 * b, out[b].d, out[b].qs);
}

void quantize_act_q8_1_scalar(const float* x, void* blocks, int64_t n) {
    auto* out = static_cast<ActBlockQ8_1*>(blocks);
    for (int64_t b = 0; b < n / 32; ++b) {
        const int32_t sum = quantize_block_q8_0(x + 32 * b, out[b].d, out[b].qs);
        float amax = 0.0f;  // the unrounded d again (the block stores only its f16)
        for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[32 * b + j]));
        out[b].s = tensor::f32_to_f16(amax / 127.0f * float(sum));
    }
}

void quantize_act_q8_K_scalar(const float* x, void* blocks, int64_t n) {
    auto* out = static_cast<ActBlockQ8_K*>(blocks);
    for (int64_t b = 0; b < n / 256; ++b, x += 256) {
        ActBlockQ8_K& block = out[b];
        float max = 0.0f, amax = 0.0f;
        for (int j = 0; j < 256; ++j) {
            if (std::fabs(x[j]) > amax) {
                amax = std::fabs(x[j]);
                max = x[j];
            }
        }
        if (amax == 0.0f) {
            std::memset(&block, 0, sizeof block);
            continue;
        }
        const float iscale = -127.0f / max;
        for (int j = 0; j < 256; ++j) block.qs[j] = int8_t(std::clamp(nearest_int(iscale * x[j]), -128, 127));
        for (int j = 0; j < 16; ++j) {
            int sum = 0;
            for (int i = 0; i < 16; ++i) sum += block.qs[16 * j + i];
            block.bsums[j] = int16_t(sum);
        }
        block.d = 1.0f / iscale;
    }
}

ActivationFormat activation_format(tensor::Type weight) {
    using T = tensor::Type;
    switch (weight) {
        case T::Q8_0: case T::MXFP4: case T::Q4_0: case T::Q5_0: case T::IQ4_NL:
            return ActivationFormat::q8_0;
        case T::Q4_1: case T::Q5_1:
            return ActivationFormat::q8_1;
        case T::Q2_K: case T::Q3_K: case T::Q4_K: case T::Q5_K: case T::Q6_K: case T::IQ4_XS:
        case T::IQ1_S: case T::IQ1_M: case T::IQ2_XXS: case T::IQ2_XS: case T::IQ2_S:
        case T::IQ3_XXS: case T::IQ3_S: case T::TQ1_0: case T::TQ2_0:
            return ActivationFormat::q8_K;
        default:
            return ActivationFormat::f32;
    }
}

const char* activation_format_name(ActivationFormat format) {
    switch (format) {
        case ActivationFormat::f32: return "f32";
        case ActivationFormat::q8_0: return "q8_0";
        case ActivationFormat::q8_1: return "q8_1";
        case ActivationFormat::q8_K: return "q8_K";
    }
    return "?";
}

int64_t activation_block_size(ActivationFormat format) {
    switch (format) {
        case ActivationFormat::f32: return 1;
        case ActivationFormat::q8_0: case ActivationFormat::q8_1: return 32;
        case ActivationFormat::q8_K: return 256;
    }
    return 1;
}

size_t activation_block_bytes(ActivationFormat format) {
    switch (format) {
        case ActivationFormat::f32: return sizeof(float);
        case ActivationFormat::q8_0: return sizeof(ActBlockQ8_0);
        case ActivationFormat::q8_1: return sizeof(ActBlockQ8_1);
        case ActivationFormat::q8_K: return sizeof(ActBlockQ8_K);
    }
    return sizeof(float);
}

size_t activation_row_bytes(ActivationFormat format, int64_t n) {
    const int64_t block = activation_block_size(format);
    if (n < 0 || n % block != 0) throw Error("activation " + misfit(format, n));
    return size_t(n / block) * activation_block_bytes(format);
}

QuantizeActivationFn activation_quantizer(ActivationFormat format, Isa isa) {
    if (!isa_supported(isa)) return nullptr;
    const bool simd = isa != Isa::scalar;
    switch (format) {
        case ActivationFormat::f32: return nullptr;
        case ActivationFormat::q8_0: return simd ? quantize_act_q8_0_avx2 : quantize_act_q8_0_scalar;
        case ActivationFormat::q8_1: return simd ? quantize_act_q8_1_avx2 : quantize_act_q8_1_scalar;
        case ActivationFormat::q8_K: return simd ? quantize_act_q8_K_avx2 : quantize_act_q8_K_scalar;
    }
    return nullptr;
}

void quantize_activation_row(ActivationFormat format, const float* x, void* blocks, int64_t n, const char* what) {
    static const Isa isa = best_isa();
    const QuantizeActivationFn quantize = activation_quantizer(format, isa);
    if (!quantize) throw Error(std::string(what) + ": no activation quantiser for format " + activation_format_name(format));
    if (n < 0 || n % activation_block_size(format) != 0) throw Error(std::string(what) + ": " + misfit(format, n));
    quantize(x, blocks, n);
}

}  // namespace k3::kernels
