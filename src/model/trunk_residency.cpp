// Model::make_trunk_resident: under a memory budget every non-expert weight matrix is read
// once into memory the model owns, so that expert streaming can never evict it (issue #7).
// Model::prefault_share: a parallel rank whose share fits reads it in at load (issue #17).
#include <algorithm>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "gguf/gguf_file.h"
#include "model/model.h"
#include "parallel/collective.h"
#include "util/mapped_file.h"
#include "util/progress.h"
#include "util/uncached_reader.h"

namespace k3::model {

namespace {

// How a parallel rank reads a trunk matrix: whole, or only its share of the rows (the products
// ForwardContext::linear always splits: the heads' output projections of sharded layers, the dense
// FFN, the MoE's latent and shared projections, the output head; model/shard.h). Other matrices
// that a layer too small to shard splits as well are conservatively kept whole.
enum class RankReads { whole, row_share };

// Calls f(view, reads) for every weight matrix except the routed experts' stacked tensors.
template <class Weights, class F>
void for_each_trunk_matrix(Weights& w, F&& f) {
    auto optional = [&](auto& m) {
        if (m) f(*m, RankReads::whole);
    };
    auto glu = [&](auto& g) {
        for (auto* m : {&g.gate, &g.up, &g.down}) f(*m, RankReads::row_share);
    };
    f(w.token_embd, RankReads::whole);
    f(w.output, RankReads::row_share);
    for (auto& layer : w.layers) {
        if (auto& k = layer.kda) {
            for (auto* m : {&k->q, &k->k, &k->v, &k->f_a, &k->f_b, &k->beta, &k->g}) f(*m, RankReads::whole);
            f(k->out, k->n_head_total ? RankReads::row_share : RankReads::whole);
        }
        if (auto& m = layer.mla) {
            optional(m->q_a);
            optional(m->q_b);
            optional(m->q);
            optional(m->gate);
            for (auto* v : {&m->kv_a, &m->k_b, &m->v_b}) f(*v, RankReads::whole);
            f(m->out, m->n_head_total ? RankReads::row_share : RankReads::whole);
        }
        if (layer.dense) glu(*layer.dense);
        if (auto& e = layer.moe) {
            f(e->router, RankReads::whole);
            for (auto& m : {&e->routed_down, &e->routed_up})
                if (*m) f(**m, RankReads::row_share);
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

// The rows of `view` that rank `rank` of `size` reads.
parallel::Range rows_read(const MatrixView& view, RankReads reads, int rank, int size) {
    return reads == RankReads::whole ? parallel::Range{0, view.rows} : parallel::share_of(view.rows, rank, size);
}

// The trunk's layout: every view whole, each at its file offset modulo kPlacement.
template <class Weights>
uint64_t layout_bytes(Weights& weights, const TensorLocator& tensors) {
    uint64_t used = 0;
    std::unordered_set<const uint8_t*> counted;
    for_each_trunk_matrix(weights, [&](const MatrixView& view, RankReads) {
        if (!counted.insert(view.data).second) return;
        const FileRange range = tensors.locate(view);
        used = placed_at(used, range.offset) + range.n_bytes;
    });
    return used;
}

}  // namespace

uint64_t Model::trunk_bytes() const {
    uint64_t bytes = 0;
    std::unordered_set<const uint8_t*> counted;
    for_each_trunk_matrix(weights_, [&](const MatrixView& view, RankReads reads) {
        if (counted.insert(view.data).second)
            bytes += uint64_t(rows_read(view, reads, rank_, n_ranks_).count) * view.row_stride;
    });
    return bytes;
}

void Model::make_trunk_resident(std::FILE* progress) {
    const TensorLocator tensors(*file_);
    std::vector<std::unique_ptr<util::UncachedReader>> parts;
    for (const std::string& path : file_->part_paths()) parts.push_back(std::make_unique<util::UncachedReader>(path));
    // Laid out whole, but only the rows this rank reads are written: the pages of the others are
    // never touched, so they take no memory (but for the huge pages at a share's edges).
    util::AnonymousMemory memory(layout_bytes(weights_, tensors));
    struct RowsRead {
        size_t part;
        uint64_t offset, length;
        uint8_t* destination;
    };
    std::vector<RowsRead> reads;  // laid out first, so that the progress knows the whole
    uint64_t used = 0, read_bytes = 0;
    std::unordered_map<const uint8_t*, const uint8_t*> moved;  // a tensor bound twice is read once
    for_each_trunk_matrix(weights_, [&](MatrixView& view, RankReads rank_reads) {
        auto [it, fresh] = moved.emplace(view.data, nullptr);
        if (fresh) {
            const FileRange range = tensors.locate(view);
            uint8_t* destination = memory.data() + placed_at(used, range.offset);
            const parallel::Range rows = rows_read(view, rank_reads, rank_, n_ranks_);
            const uint64_t first = uint64_t(rows.first) * view.row_stride;
            reads.push_back({range.part, range.offset + first, uint64_t(rows.count) * view.row_stride, destination + first});
            read_bytes += reads.back().length;
            it->second = destination;
            trunk_copies_.push_back({destination, range.n_bytes, view.data});
            used = placed_at(used, range.offset) + range.n_bytes;
        }
        view.data = it->second;
    });
    util::Progress bar(progress, read_bytes, reads.size());
    for (const RowsRead& r : reads) {
        parts[r.part]->read_exact(r.offset, r.length, r.destination);
        bar.advance(r.length, "trunk");
    }
    // What loading read through the mapping (header, the vectors decoded to f32) need not stay cached.
    for (const auto& part : parts) part->drop_cached_pages();
    trunk_ = std::move(memory);
    bar.finish();
}

void Model::prefault_share() const {
    std::unordered_set<const uint8_t*> done;
    for_each_trunk_matrix(weights_, [&](const MatrixView& view, RankReads reads) {
        if (!done.insert(view.data).second) return;
        const parallel::Range rows = rows_read(view, reads, rank_, n_ranks_);
        util::populate_mapped_pages(view.data + uint64_t(rows.first) * view.row_stride,
                                    uint64_t(rows.count) * view.row_stride);
    });
    for (const LayerWeights& layer : weights_.layers) {
        if (!layer.moe) continue;
        const MoeWeights& moe = *layer.moe;
        for (int64_t e = 0; e < hp_.n_expert; ++e) {
            if (!moe.expert_rank.empty() && moe.expert_rank[size_t(e)] != rank_) continue;
            for (const MatrixView* m : {&moe.gate_exps, &moe.up_exps, &moe.down_exps}) {
                const uint64_t expert_bytes = uint64_t(m->rows / hp_.n_expert) * m->row_stride;
                util::populate_mapped_pages(m->data + uint64_t(e) * expert_bytes, expert_bytes);
            }
        }
    }
}

const uint8_t* Model::mapped_address(const uint8_t* p) const {
    const auto after = std::upper_bound(trunk_copies_.begin(), trunk_copies_.end(), p,
                                        [](const uint8_t* q, const TrunkCopy& c) { return q < c.copy; });
    if (after == trunk_copies_.begin()) return p;
    const TrunkCopy& c = *(after - 1);
    return p < c.copy + c.n_bytes ? c.mapped + (p - c.copy) : p;
}

}  // namespace k3::model
