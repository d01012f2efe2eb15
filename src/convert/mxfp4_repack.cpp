#include "convert/mxfp4_repack.h"

#include "tensor/block_mxfp4.h"

namespace k3::convert {

void repack_mxfp4(const uint8_t* packed, const uint8_t* scales, int64_t rows, int64_t cols, uint8_t* out,
                  std::string_view what) {
    using tensor::kMxfp4BlockBytes;
    using tensor::kMxfp4BlockSize;
    const int64_t n_blocks = rows * (cols / kMxfp4BlockSize);
    for (int64_t b = 0; b < n_blocks; ++b) {
        const uint8_t* codes = packed + b * (kMxfp4BlockSize / 2);  // element k: nibble k&1 of byte k/2
        auto code = [&](int k) { return uint8_t((codes[k / 2] >> (4 * (k & 1))) & 15); };
        uint8_t* block = out + b * kMxfp4BlockBytes;
        block[0] = scales[b];
        for (int j = 0; j < kMxfp4BlockSize / 2; ++j) block[1 + j] = uint8_t(code(j) | code(j + 16) << 4);
    }
    tensor::validate_mxfp4_blocks(out, n_blocks, what);
}

}  // namespace k3::convert
