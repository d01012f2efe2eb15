// How often each routed expert of each layer is chosen, with exponential decay so that recent
// routing counts most: the expert cache evicts the lowest score and warms up the highest.
// Decay is counted in visits of the expert's own layer (one per forward pass), so scores of
// different layers compare fairly whatever the order the layers run in. Lazy: each entry keeps
// its value as of a tick and is decayed when read.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace k3::runtime {

struct ExpertKey {
    int64_t layer = 0;
    int32_t expert = 0;
    bool operator==(const ExpertKey&) const = default;
};

class RoutingStats {
public:
    // half_life: visits of a layer after which a count weighs half.
    RoutingStats(int64_t n_layer, int64_t n_expert, double half_life = 64.0);

    int64_t n_layer() const { return n_layer_; }
    int64_t n_expert() const { return n_expert_; }

    // One visit of layer il: every score of the layer decays one step, then experts[i] gains
    // counts[i] (the tokens routed to it).
    void record(int64_t il, std::span<const int32_t> experts, std::span<const int64_t> counts);
    double score(int64_t il, int32_t expert) const;
    bool empty() const;  // nothing recorded or loaded

    // The candidate to evict: lowest score; ties go to the higher layer, then the higher expert
    // id (deterministic). Precondition: candidates not empty.
    ExpertKey lowest(std::span<const ExpertKey> candidates) const;

    // JSON {"format":"k3-expert-stats","n_layer":L,"n_expert":X,"half_life":H,"scores":[[...]...]},
    // written to a temporary file and renamed, so a crash never leaves half a file.
    void save(const std::string& path) const;
    // Loads a saved file; k3::Error naming the file when it is unreadable or holds another
    // shape (naming both shapes).
    static RoutingStats load(const std::string& path, int64_t n_layer, int64_t n_expert, double half_life = 64.0);

private:
    size_t index(int64_t il, int32_t expert) const { return size_t(il * n_expert_ + expert); }
    int64_t n_layer_, n_expert_;
    double decay_;                    // per visit: 2^(-1/half_life)
    std::vector<double> value_;       // [n_layer][n_expert], as of tick_
    std::vector<int64_t> tick_;       // [n_layer][n_expert]
    std::vector<int64_t> layer_tick_; // [n_layer]: visits so far
};

}  // namespace k3::runtime
