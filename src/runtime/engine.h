// The loaded model: immutable after load, shared by every session and thread.
// One Engine::decode() call runs one forward pass over several sequences of any lengths.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "runtime/expert_residency.h"  // ExpertWarmup, ExpertCacheCounters
#include "runtime/session.h"           // SessionSnapshot

// The layers below are named, not included: a caller that sets a diagnostic option includes
// the header that defines its values (model/context.h, kernels/matmul.h).
namespace k3::gguf { struct TensorInfo; }
namespace k3::kernels {
enum class Numerics;  // kernels/matmul.h
struct MatrixView;
}  // namespace k3::kernels
namespace k3::model {
enum class KdaMode;  // model/context.h
struct SequenceState;
}  // namespace k3::model
namespace k3::parallel { class Collective; }
namespace k3::text { class Tokenizer; }

namespace k3::runtime {

class Session;

// Memory residency (issue #7). A budget smaller than the model's files keeps every non-expert
// tensor resident and streams routed experts through an ExpertCache of the rest.
struct ResidencyOptions {
    std::optional<uint64_t> mem_budget;  // bytes; unset: from the memory limit (memory_budget.h); 0: none
    std::string expert_stats_path;       // routing statistics: loaded when the file exists, saved at exit
    std::optional<ExpertWarmup> warmup;  // unset: hot when statistics were loaded, else none
    // The prompt cache's memory (--cache-ram), left free in the budget like working memory.
    // Unset: what the model and working memory leave of the budget (at most 8 GiB, llama-server's
    // default), a 16th of it when experts stream from disk, 8 GiB without a budget.
    std::optional<uint64_t> prompt_cache_bytes;
    // --no-mmap: a model that fits is read into this process's memory as one that does not fit is
    // (the trunk resident, every routed expert in the expert cache, warmed up at start), past the
    // page cache; without it, a model that fits stays mapped from the file. Where file-mapped
    // pages read slower than anonymous ones (measured on a Firecracker VM under PVM: decode's
    // expert products about twice as fast from anonymous memory).
    bool no_mmap = false;
};

// The same types as model::DumpFn and model::MatmulObserver (model/context.h).
using DumpFn = std::function<void(const std::string& name, const float* data, int64_t rows, int64_t cols)>;
using MatmulObserver = std::function<void(const kernels::MatrixView& w, const float* x, int64_t x_stride, int64_t n)>;

struct EngineOptions {
    int n_threads = 0;  // 0: one per hardware thread
    // Diagnostics: force one KDA path; receive named intermediates, as llama.cpp names them (kda_out-3, ...).
    model::KdaMode kda_mode{};  // automatic (the first value; engine.cpp checks)
    DumpFn dump;
    MatmulObserver observe;  // sees every weight product's input (k3 imatrix)
    ResidencyOptions residency;
    // native (the first value; engine.cpp checks): activations rounded as llama.cpp's CPU
    // backend rounds them; exact: f32 (--exact).
    kernels::Numerics numerics{};
    // A parallel job (--parallel-mode tp): every rank loads the same file, checks in with the others
    // (each rank's load error or model hash, waiting at most parallel_start_timeout) and computes
    // its share of every forward pass. Null: this process alone.
    parallel::Collective* collective = nullptr;
    std::chrono::milliseconds parallel_start_timeout = std::chrono::minutes(5);
    // In a parallel job, only rank 0 receives logits (model::ForwardOptions::logits_on_root_only);
    // the other ranks' SequenceInput::logits are then zeros.
    bool logits_on_root_only = false;
    // In a parallel job: rank 0 leads (runs the command and announces every session operation,
    // session_mirror.h) and every other rank follows (Engine::follow()), instead of every rank
    // running the command in lockstep.
    bool followers = false;
};

// What front ends need to know about the loaded model, from its metadata.
struct ModelInfo {
    std::string path;                          // as given to Engine::load (a split model's first part)
    int32_t n_vocab = 0;
    int64_t n_ctx_train = 0;                   // kimi-k3.context_length
    std::optional<std::string> chat_template;  // tokenizer.chat_template, when the file has one
};

// One sequence's part of a forward pass: its session and the tokens that continue it.
struct SequenceInput {
    Session* session = nullptr;
    std::span<const int32_t> tokens;
    bool all_logits = false;    // logits for every token; otherwise only for the last one
    std::vector<float> logits;  // out: [n_rows][n_vocab], n_rows = tokens.size() or 1
    // Snapshots inside the pass (the prompt cache's checkpoints): token counts into `tokens`,
    // multiples of model::kKdaChunk, ascending, each strictly inside; captured[i] is the session
    // as it was after capture_at[i] of them, taken without stopping the pass there.
    std::vector<int64_t> capture_at = {};
    std::vector<SessionSnapshot> captured = {};  // out
};

class Engine {
public:
    // Opens and binds a K3 GGUF (every part of a split model). Throws k3::Error; in a parallel
    // job, on every rank when any rank failed.
    static std::unique_ptr<Engine> load(const std::string& path, const EngineOptions& options = {});
    ~Engine();
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;

    const ModelInfo& info() const;
    const text::Tokenizer& tokenizer() const;  // the model's vocabulary, merges and control tokens
    // The file's tensors as this engine maps them: their data is what a MatmulObserver's
    // weights point into (k3 imatrix names each product's weight by it).
    std::span<const gguf::TensorInfo> tensors() const;
    int32_t n_vocab() const;
    int64_t n_ctx_train() const;             // kimi-k3.context_length
    int n_threads() const;
    // Bytes of weights one decode step reads (dense matrices, the used experts' share, one
    // embedding row): the numerator of the memory-bandwidth bound.
    uint64_t weight_bytes_per_token() const;

    // The expert cache's figures when experts are streamed under a budget; nullopt otherwise.
    std::optional<ExpertCacheCounters> expert_cache_counters() const;
    // The prompt cache's share of the memory budget (ResidencyOptions::prompt_cache_bytes).
    uint64_t prompt_cache_bytes() const;

    std::unique_ptr<Session> new_session() const;
    model::SequenceState empty_state() const;  // a sequence that has consumed nothing
    uint64_t identity() const;                 // model_identity() of the file (session_file.h)

    // One forward pass over every input (each session at most once). Advances each session by
    // its tokens and fills each input's logits. Calls from several threads are serialized.
    // Throws k3::Error for an out-of-vocabulary token.
    void decode(std::span<SequenceInput> inputs) const;

    // A rank of a parallel job other than 0 loaded with EngineOptions::followers: the command
    // calls follow() instead of running, and ends when it returns.
    bool follower() const;
    // Replays rank 0's session operations until rank 0's engine closes. Throws k3::Error when one
    // fails here (the job ends, naming this rank).
    void follow() const;

private:
    Engine();
    void decode_here(std::span<SequenceInput> inputs) const;  // decode() without announcing it
    struct Impl;
    std::unique_ptr<Impl> impl_;
    friend class Session;
};

}  // namespace k3::runtime
