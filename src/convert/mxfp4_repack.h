// compressed-tensors "mxfp4-pack-quantized" -> ggml block_mxfp4, a lossless repack
// (k3-architecture.md §9): per 32-element group the E8M0 scale byte is copied unchanged and
// the 32 E2M1 codes move from "element 2i low nibble, 2i+1 high nibble" to ggml's
// "byte j = code[j] | code[j+16] << 4". Codes and scales need no remapping.
#pragma once

#include <cstdint>
#include <string_view>

namespace k3::convert {

// Repacks a rows x cols matrix (cols a multiple of 32):
//   packed [rows][cols/2] bytes, scales [rows][cols/32] E8M0 bytes
//   -> out [rows][cols/32] blocks of 17 bytes.
// A 0xFF scale (NaN in OCP MX) throws k3::Error naming `what` (the HF scale tensor).
void repack_mxfp4(const uint8_t* packed, const uint8_t* scales, int64_t rows, int64_t cols, uint8_t* out,
                  std::string_view what);

}  // namespace k3::convert
