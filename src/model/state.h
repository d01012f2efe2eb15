// The state one sequence carries between forward passes (DESIGN.md: state is per sequence).
// Built to roll back and to share: the MLA latent cache lives in fixed-size, reference-counted
// pages (appending never moves what is cached; two sequences with a common prefix hold the same
// pages), and each KDA layer's conv + recurrent state is copy-on-write, so a copy of a
// SequenceState (a snapshot, a checkpoint) costs pointers until one side advances.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace k3::model {

// Rows of one MLA layer's latent cache ([normed latent | k_pe] per token) in pages of
// kTokensPerPage rows. A page is shared by every copy that holds it; the only page ever written
// is the partly filled last one, which is copied first when another holder shares it.
class PagedRows {
public:
    static constexpr int64_t kTokensPerPage = 64;

    PagedRows() = default;
    explicit PagedRows(int64_t row_width) : width_(row_width) {}

    int64_t size() const { return n_rows_; }  // rows (tokens) held
    int64_t row_width() const { return width_; }
    const float* row(int64_t index) const {
        return pages_[size_t(index / kTokensPerPage)]->data() + (index % kTokensPerPage) * width_;
    }
    void append(const float* rows, int64_t n);
    void truncate(int64_t n_rows);  // keeps the first n_rows (<= size())

    // Bytes of one page; pages() lets a caller count a page shared by several holders once.
    uint64_t page_bytes() const { return uint64_t(kTokensPerPage * width_) * sizeof(float); }
    const std::vector<std::shared_ptr<std::vector<float>>>& pages() const { return pages_; }

private:
    int64_t width_ = 0;
    int64_t n_rows_ = 0;
    std::vector<std::shared_ptr<std::vector<float>>> pages_;
};

// One KDA layer's recurrent state; shared until written (KdaStateRef::writable).
struct KdaState {
    std::vector<float> conv;       // [3 (q, k, v)][I channels][conv_kernel - 1], oldest first
    std::vector<float> recurrent;  // [n_head][D key][D value], f32
};

struct LayerState {
    std::shared_ptr<KdaState> kda;  // KDA layers only; written through writable_kda()
    PagedRows mla;                        // MLA layers only

    // The KDA state, copied first if another SequenceState shares it. Not thread-safe: call
    // before handing the state to worker threads.
    KdaState& writable_kda();
};

struct SequenceState {
    const void* model = nullptr;  // the Model it belongs to (restore checks it)
    int64_t position = 0;         // tokens consumed
    std::vector<LayerState> layers;

    // Bytes of memory this state holds (KDA states + MLA pages), each page counted in full.
    uint64_t bytes() const;
};

// One sequence's rows in a forward pass over a flat batch of tokens.
struct SequenceSlice {
    SequenceState* state = nullptr;
    int64_t first = 0;     // first row in the batch
    int64_t n_tokens = 0;
    // Checkpoints inside the pass: token counts into the slice, ascending, each in (0, n_tokens);
    // captured[i] receives the KDA layers' states after capture_at[i] tokens (SequenceRequest).
    std::span<const int64_t> capture_at = {};
    SequenceState* captured = nullptr;
};

}  // namespace k3::model
