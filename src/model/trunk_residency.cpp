// Model::make_trunk_resident: under a memory budget every non-expert weight matrix is read
// once into memory the model owns, so that expert streaming can never evict it (issue #7).
#include <algorithm>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "gguf/gguf_file.h"
#include "model/model.h"
#include "util/uncached_reader.h"

namespace k3::model {

namespace {

// Calls f(view) for every weight matrix except the routed experts' stacked tensors.
template <class Weights, class F>
void for_each_trunk_matrix(Weights& w, F&& f) {
    auto optional = [&](auto& m) {
        if (m) f(*m);
    };
    auto glu = [&](auto& g) {
        f(g.gate);
        f(g.up);
        f(g.down);
    };
    f(w.token_embd);
    f(w.output);
    for (auto& layer : w.layers) {
        if (auto& k = layer.kda) {
            for (auto* m : {&k->q, &k->k, &k->v, &k->f_a, &k->f_b, &k->beta, &k->g, &k->out}) f(*m);
        }
        if (auto& m = layer.mla) {
            optional(m->q_a);
            optional(m->q_b);
            optional(m->q);
            optional(m->gate);
            for (auto* v : {&m->kv_a, &m->k_b, &m->v_b, &m->out}) f(*v);
        }
        if (layer.dense) glu(*layer.dense);
        if (auto& e = layer.moe) {
            f(e->router);
            optional(e->routed_down);
            optional(e->routed_up);
            if (e->shared) glu(*e->shared);
        }
    }
}

// Where a trunk view's bytes lie in the file: a whole tensor, or a parallel rank's rows of one
// (model/shard.h), which alone are made resident.
struct FileRange {
    uint32_t part = 0;
    uint64_t offset = 0, n_bytes = 0;
};

class TensorLocator {
public:
    explicit TensorLocator(const gguf::GgufFile& file) {
        for (const gguf::TensorInfo& t : file.tensors()) by_data_.push_back(&t);
        std::sort(by_data_.begin(), by_data_.end(),
                  [](const gguf::TensorInfo* a, const gguf::TensorInfo* b) { return a->data < b->data; });
    }
    FileRange locate(const MatrixView& view) const {
        const auto starts_after = [](const uint8_t* data, const gguf::TensorInfo* t) { return data < t->data; };
        const auto after = std::upper_bound(by_data_.begin(), by_data_.end(), view.data, starts_after);
        const gguf::TensorInfo* t = *(after - 1);  // the tensor the view lies in
        return {t->part, t->file_offset + uint64_t(view.data - t->data), uint64_t(view.rows) * view.row_stride};
    }

private:
    std::vector<const gguf::TensorInfo*> by_data_;  // ascending data addresses
};

// Each tensor sits at the same address modulo kPlacement as in the mapped file, so the kernels
// see the alignment they see without a budget.
constexpr uint64_t kPlacement = 64;

uint64_t placed_at(uint64_t used, uint64_t file_offset) {
    return used + (file_offset - used) % kPlacement;
}

}  // namespace

uint64_t Model::trunk_bytes() const {
    const TensorLocator tensors(*file_);
    uint64_t used = 0;
    std::unordered_set<const uint8_t*> counted;
    for_each_trunk_matrix(weights_, [&](const MatrixView& view) {
        if (!counted.insert(view.data).second) return;
        const FileRange range = tensors.locate(view);
        used = placed_at(used, range.offset) + range.n_bytes;
    });
    return used;
}

void Model::make_trunk_resident() {
    const TensorLocator tensors(*file_);
    std::vector<std::unique_ptr<util::UncachedReader>> parts;
    for (const std::string& path : file_->part_paths()) parts.push_back(std::make_unique<util::UncachedReader>(path));
    util::AnonymousMemory memory(trunk_bytes());
    uint64_t used = 0;
    std::unordered_map<const uint8_t*, const uint8_t*> moved;  // a tensor bound twice is read once
    for_each_trunk_matrix(weights_, [&](MatrixView& view) {
        auto [it, fresh] = moved.emplace(view.data, nullptr);
        if (fresh) {
            const FileRange range = tensors.locate(view);
            uint8_t* destination = memory.data() + placed_at(used, range.offset);
            parts[range.part]->read_exact(range.offset, range.n_bytes, destination);
            it->second = destination;
            used = placed_at(used, range.offset) + range.n_bytes;
        }
        view.data = it->second;
    });
    // What loading read through the mapping (header, the vectors decoded to f32) need not stay cached.
    for (const auto& part : parts) part->drop_cached_pages();
    trunk_ = std::move(memory);
}

}  // namespace k3::model
