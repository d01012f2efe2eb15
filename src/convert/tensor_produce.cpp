#include "convert/tensor_produce.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <thread>
#include <vector>

#include "convert/mxfp4_repack.h"
#include "tensor/block_mxfp4.h"
#include "util/error.h"

namespace k3::convert {
namespace {

std::vector<float> read_all_f32(const SafeTensor& t) {
    std::vector<float> values(size_t(t.n_elements));
    read_f32(t, values.data());
    return values;
}

// Re-encodes a plain source tensor into `type`, one row of ne0 elements at a time.
void convert_rows(const SafeTensor& src, tensor::Type type, int64_t ne0, uint8_t* out) {
    transcode_rows(src.data, *ggml_type_of(src.dtype), out, type, ne0, ne0 ? src.n_elements / ne0 : 0);
}

}  // namespace

const uint8_t* passthrough_bytes(const PlannedTensor& t) {
    if (t.recipe != Recipe::Copy) return nullptr;
    const std::optional<tensor::Type> src_type = ggml_type_of(t.sources[0]->dtype);
    return src_type == t.type ? t.sources[0]->data : nullptr;
}

void encode_rows(const float* values, int64_t n_elements, int64_t ne0, tensor::Type type, uint8_t* out) {
    const tensor::TypeTraits& to = tensor::traits(type);
    if (!to.quantize_row) throw Error("k3 cannot encode tensors as " + std::string(to.name));
    const size_t row_bytes = tensor::row_bytes(to, ne0);
    for (int64_t r = 0; ne0 && r < n_elements / ne0; ++r) to.quantize_row(values + r * ne0, out + size_t(r) * row_bytes, ne0);
}

void transcode_rows(const uint8_t* src, tensor::Type from_type, uint8_t* dst, tensor::Type to_type, int64_t ne0, int64_t n_rows,
                    RowImportance importance, int n_threads) {
    const tensor::TypeTraits& from = tensor::traits(from_type);
    const tensor::TypeTraits& to = tensor::traits(to_type);
    const size_t src_row = tensor::row_bytes(from, ne0), dst_row = tensor::row_bytes(to, ne0);
    if (from_type == to_type) {
        std::memcpy(dst, src, src_row * size_t(n_rows));
        return;
    }
    if (!from.dequantize_row) throw Error("k3 cannot decode " + std::string(from.name) + " tensors");
    if (!tensor::can_quantize(to)) throw Error("k3 cannot encode tensors as " + std::string(to.name));
    if (!importance.weights && tensor::requires_importance(to))
        throw Error(std::string(to.name) + " can only be made with an importance matrix (--imatrix)");
    auto work = [&](int64_t first, int64_t last) {
        std::vector<float> row(static_cast<size_t>(ne0));  // [ne0]
        for (int64_t r = first; r < last; ++r) {
            from.dequantize_row(src + size_t(r) * src_row, row.data(), ne0);
            const float* weights = importance.weights ? importance.weights + (r / importance.rows_per_matrix) * ne0 : nullptr;
            tensor::quantize_row(to, row.data(), dst + size_t(r) * dst_row, ne0, weights);
        }
    };
    // Threads only pay off for big tensors (a K3 matrix is ~10^8 elements).
    const int64_t wanted = n_threads > 0 ? n_threads : std::max(1u, std::thread::hardware_concurrency());
    const int64_t used = std::min<int64_t>(wanted, n_rows * ne0 / (1 << 20) + 1);
    std::vector<std::thread> threads;
    for (int64_t t = 1; t < used; ++t) threads.emplace_back(work, n_rows * t / used, n_rows * (t + 1) / used);
    work(0, n_rows / used);
    for (std::thread& thread : threads) thread.join();
}

void produce_tensor(const PlannedTensor& t, uint8_t* out) {
    const int64_t ne0 = t.ne[0];
    switch (t.recipe) {
        case Recipe::Copy:
            convert_rows(*t.sources[0], t.type, ne0, out);
            return;
        case Recipe::NegExpHeads: {
            // ssm_a = -exp(A_log[:H]), in f32 (§2.3, §13.3).
            std::vector<float> a_log = read_all_f32(*t.sources[0]);
            std::vector<float> a(static_cast<size_t>(t.ne[0]));  // [H]
            for (size_t h = 0; h < a.size(); ++h) a[h] = -std::exp(a_log[h]);
            encode_rows(a.data(), t.ne[0], ne0, t.type, out);
            return;
        }
        case Recipe::ResScore: {
            // score = res_norm ⊙ res_proj[0] (§2.2); exact in f32 for BF16 inputs.
            std::vector<float> score = read_all_f32(*t.sources[0]);  // [E]
            const std::vector<float> proj = read_all_f32(*t.sources[1]);
            for (size_t i = 0; i < score.size(); ++i) score[i] *= proj[i];
            encode_rows(score.data(), int64_t(score.size()), ne0, t.type, out);
            return;
        }
        case Recipe::KvbToKb:
        case Recipe::KvbToVb: {
            // kv_b_proj math [H, Dn+Dv, Lkv]: rows 0..Dn-1 of a head are W_kb, the rest W_vb (§2.4).
            const std::vector<float> kv_b = read_all_f32(*t.sources[0]);
            const bool k_part = t.recipe == Recipe::KvbToKb;
            const int64_t H = t.ne[2], Lkv = k_part ? t.ne[1] : t.ne[0];
            const int64_t head_rows = t.sources[0]->shape[0] / H, Dn = k_part ? t.ne[0] : head_rows - t.ne[1];
            const int64_t part_rows = k_part ? Dn : t.ne[1];
            std::vector<float> part(static_cast<size_t>(t.n_elements()));  // k: [H][Lkv][Dn]; v: [H][Dv][Lkv]
            for (int64_t h = 0; h < H; ++h)
                for (int64_t r = 0; r < part_rows; ++r)
                    for (int64_t l = 0; l < Lkv; ++l) {
                        const float v = kv_b[size_t((h * head_rows + (k_part ? r : Dn + r)) * Lkv + l)];
                        part[size_t(k_part ? (h * Lkv + l) * Dn + r : (h * part_rows + r) * Lkv + l)] = v;
                    }
            encode_rows(part.data(), t.n_elements(), ne0, t.type, out);
            return;
        }
        case Recipe::StackMxfp4: {
            const int64_t cols = t.ne[0], rows = t.ne[1];
            const size_t expert_bytes = size_t(rows * (cols / tensor::kMxfp4BlockSize) * tensor::kMxfp4BlockBytes);
            for (size_t e = 0; e < t.sources.size() / 2; ++e)
                repack_mxfp4(t.sources[2 * e]->data, t.sources[2 * e + 1]->data, rows, cols, out + e * expert_bytes,
                             t.sources[2 * e + 1]->name);
            return;
        }
        case Recipe::StackExperts: {
            const size_t expert_bytes = size_t(t.n_bytes() / uint64_t(t.sources.size()));
            for (size_t e = 0; e < t.sources.size(); ++e) convert_rows(*t.sources[e], t.type, ne0, out + e * expert_bytes);
            return;
        }
    }
}

}  // namespace k3::convert
