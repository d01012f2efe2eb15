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

// The tensor each trunk view starts at (views are bound to whole tensors).
std::unordered_map<const uint8_t*, const gguf::TensorInfo*> tensors_by_data(const gguf::GgufFile& file) {
    std::unordered_map<const uint8_t*, const gguf::TensorInfo*> map;
    for (const gguf::TensorInfo& t : file.tensors()) map.emplace(t.data, &t);
    return map;
}

// Each tensor sits at the same address modulo kPlacement as in the mapped file, so the kernels
// see the alignment they see without a budget.
constexpr uint64_t kPlacement = 64;

uint64_t placed_at(uint64_t used, uint64_t file_offset) {
    return used + (file_offset - used) % kPlacement;
}

}  // namespace

uint64_t Model::trunk_bytes() const {
    const auto tensors = tensors_by_data(*file_);
    uint64_t used = 0;
    std::unordered_set<const uint8_t*> counted;
    for_each_trunk_matrix(weights_, [&](const MatrixView& view) {
        if (!counted.insert(view.data).second) return;
        const gguf::TensorInfo* t = tensors.at(view.data);
        used = placed_at(used, t->file_offset) + t->n_bytes;
    });
    return used;
}

void Model::make_trunk_resident() {
    const auto tensors = tensors_by_data(*file_);
    std::vector<std::unique_ptr<util::UncachedReader>> parts;
    for (const std::string& path : file_->part_paths()) parts.push_back(std::make_unique<util::UncachedReader>(path));
    util::AnonymousMemory memory(trunk_bytes());
    uint64_t used = 0;
    std::unordered_map<const uint8_t*, const uint8_t*> moved;  // a tensor bound twice is read once
    for_each_trunk_matrix(weights_, [&](MatrixView& view) {
        auto [it, fresh] = moved.emplace(view.data, nullptr);
        if (fresh) {
            const gguf::TensorInfo* t = tensors.at(view.data);
            uint8_t* destination = memory.data() + placed_at(used, t->file_offset);
            parts[t->part]->read_exact(t->file_offset, t->n_bytes, destination);
            it->second = destination;
            trunk_copies_.push_back({destination, t->n_bytes, t->data});
            used = placed_at(used, t->file_offset) + t->n_bytes;
        }
        view.data = it->second;
    });
    // What loading read through the mapping (header, the vectors decoded to f32) need not stay cached.
    for (const auto& part : parts) part->drop_cached_pages();
    trunk_ = std::move(memory);
}

const uint8_t* Model::mapped_address(const uint8_t* p) const {
    const auto after = std::upper_bound(trunk_copies_.begin(), trunk_copies_.end(), p,
                                        [](const uint8_t* q, const TrunkCopy& c) { return q < c.copy; });
    if (after == trunk_copies_.begin()) return p;
    const TrunkCopy& c = *(after - 1);
    return p < c.copy + c.n_bytes ? c.mapped + (p - c.copy) : p;
}

}  // namespace k3::model
