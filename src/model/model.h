// A loaded K3 model: hyper-parameters, bound weights and the forward pass (k3-architecture.md
// §3) over a batch of sequences of any lengths. Immutable after load; forward() only mutates
// the sequences' states.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kernels/thread_pool.h"
#include "model/context.h"
#include "model/hparams.h"
#include "model/state.h"
#include "model/weights.h"
#include "util/anonymous_memory.h"

namespace k3::gguf { class GgufFile; }

namespace k3::model {

struct ForwardOptions {
    KdaMode kda_mode = KdaMode::automatic;
    DumpFn dump;  // named intermediates as llama.cpp names them (kda_out-N, l_out-N, ...), when set
    ExpertSource* experts = nullptr;  // null: row ranges of the mapped file (MappedExperts)
    kernels::Numerics numerics = kernels::Numerics::native;  // as llama.cpp's CPU backend
    parallel::Collective* collective = nullptr;  // a parallel job's ranks (ForwardContext::collective)
    // In a parallel job: the logits are gathered to rank 0 alone (the others' SequenceRequest::logits
    // are not written), for jobs in which only rank 0 samples; this saves the largest collective.
    bool logits_on_root_only = false;
    MatmulObserver observe;  // sees every weight product's input, when set
};

// One sequence's part of a forward pass.
struct SequenceRequest {
    SequenceState* state = nullptr;
    std::span<const int32_t> tokens;
    bool all_logits = false;
    float* logits = nullptr;  // out: [all_logits ? tokens.size() : 1][n_vocab]
    // States inside the pass, for the prompt cache: after capture_at[i] tokens (multiples of
    // kKdaChunk, so the KDA chunks stay where they were; ascending, each in (0, tokens.size()))
    // the sequence's state goes to (*captured)[i], as if the pass had stopped there, without a
    // pass of its own. A KDA state cannot be cut back, so this is the only way to checkpoint it
    // inside a prompt fed at once.
    std::span<const int64_t> capture_at = {};
    std::vector<SequenceState>* captured = nullptr;
};

// Throws k3::Error naming the first token id outside [0, n_vocab).
void check_token_ids(std::span<const int32_t> tokens, int64_t n_vocab);

class Model {
public:
    static std::unique_ptr<Model> load(const std::string& path);
    ~Model();

    const gguf::GgufFile& file() const { return *file_; }
    const HParams& hparams() const { return hp_; }
    const ModelWeights& weights() const { return weights_; }

    // Keeps only rank `rank` of `size`'s share of the weights (model/shard.h); expert_loads
    // ([n_layer][n_expert], or empty) balance the routed experts. Call before make_trunk_resident()
    // (which then copies only the rows this rank reads) and before any new_state().
    void shard(int rank, int size, std::span<const double> expert_loads = {});
    // The rank that runs each routed expert, layer after layer ([n_layer][n_expert] for the MoE
    // layers), after shard(): what every rank of a job must agree on.
    std::vector<int32_t> expert_ranks() const;

    SequenceState new_state() const;  // an empty sequence

    // Bytes of weights one decode step reads: every dense matrix, the used share of each
    // layer's routed experts (n_used of n_expert), one embedding row. For speed-of-light figures;
    // after shard() still the whole model's: what a step reads across all the ranks of a job.
    uint64_t weight_bytes_per_token() const;

    // Bytes the trunk (every weight matrix but the routed experts; after shard(), the rows of them
    // this rank reads) takes once made resident.
    uint64_t trunk_bytes() const;
    // Copies the trunk into memory the model owns (pread, then dropped from the page cache) and points the
    // weights at it: afterwards only routed experts are still reached through the mapped file
    // (for an ExpertSource that streams them). Call before any forward pass. Reports its progress
    // to `progress` (util::Progress; null: silent).
    void make_trunk_resident(std::FILE* progress = nullptr);
    // Reads what this rank's passes read of the mapped file (its rows of the trunk, its routed
    // experts; after shard()) into memory now, so that no pass waits on the disk: for a parallel
    // rank whose share fits its memory. Throws k3::Error when the file cannot be read.
    void prefault_share() const;

    // Runs every request's tokens through the model as one batch and writes its logits.
    // Throws k3::Error for a token outside the vocabulary (before touching any state).
    void forward(kernels::ThreadPool& pool, std::span<const SequenceRequest> requests,
                 const ForwardOptions& options = {}) const;

private:
    Model() = default;
    std::unique_ptr<gguf::GgufFile> file_;
    HParams hp_;
    ModelWeights weights_;
    util::AnonymousMemory trunk_;  // the resident trunk, when make_trunk_resident() ran
    int rank_ = 0, n_ranks_ = 1;   // this process's part of a parallel job (shard())
    uint64_t bytes_per_token_ = 0;  // weight_bytes_per_token(), taken at load
    // Where each tensor make_trunk_resident() copied lies in the mapped file, ascending by copy:
    // an observer sees every weight at its file address, wherever the forward pass reads it.
    struct TrunkCopy {
        const uint8_t* copy;
        uint64_t n_bytes;
        const uint8_t* mapped;
    };
    std::vector<TrunkCopy> trunk_copies_;
    const uint8_t* mapped_address(const uint8_t* p) const;
};

}  // namespace k3::model
