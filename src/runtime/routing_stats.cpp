#include "runtime/routing_stats.h"

#include <cmath>
#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "util/error.h"

namespace k3::runtime {

RoutingStats::RoutingStats(int64_t n_layer, int64_t n_expert, double half_life)
    : n_layer_(n_layer), n_expert_(n_expert), decay_(std::exp2(-1.0 / half_life)),
      value_(size_t(n_layer * n_expert), 0.0), tick_(size_t(n_layer * n_expert), 0), layer_tick_(size_t(n_layer), 0) {}

void RoutingStats::record(int64_t il, std::span<const int32_t> experts, std::span<const int64_t> counts) {
    const int64_t now = ++layer_tick_[size_t(il)];
    for (size_t i = 0; i < experts.size(); ++i) {
        const size_t at = index(il, experts[i]);
        value_[at] = score(il, experts[i]) + double(counts[i]);
        tick_[at] = now;
    }
}

double RoutingStats::score(int64_t il, int32_t expert) const {
    const size_t at = index(il, expert);
    // score = value * decay^(visits since the value was set)
    return value_[at] * std::pow(decay_, double(layer_tick_[size_t(il)] - tick_[at]));
}

bool RoutingStats::empty() const {
    for (double v : value_)
        if (v != 0.0) return false;
    return true;
}

ExpertKey RoutingStats::lowest(std::span<const ExpertKey> candidates) const {
    ExpertKey best = candidates.front();
    double best_score = score(best.layer, best.expert);
    for (const ExpertKey& k : candidates.subspan(1)) {
        const double s = score(k.layer, k.expert);
        if (s < best_score || (s == best_score && (k.layer > best.layer || (k.layer == best.layer && k.expert > best.expert)))) {
            best = k;
            best_score = s;
        }
    }
    return best;
}

void RoutingStats::save(const std::string& path) const {
    nlohmann::json scores = nlohmann::json::array();
    for (int64_t il = 0; il < n_layer_; ++il) {
        nlohmann::json row = nlohmann::json::array();
        for (int32_t e = 0; e < n_expert_; ++e) row.push_back(score(il, e));
        scores.push_back(std::move(row));
    }
    const nlohmann::json doc = {{"format", "k3-expert-stats"},
                                {"n_layer", n_layer_},
                                {"n_expert", n_expert_},
                                {"half_life", -1.0 / std::log2(decay_)},
                                {"scores", std::move(scores)}};
    const std::string temporary = path + ".tmp";
    {
        std::ofstream out(temporary, std::ios::trunc);
        out << doc.dump() << '\n';
        if (!out.flush()) throw Error("cannot write expert statistics to " + temporary);
    }
    if (std::rename(temporary.c_str(), path.c_str()) != 0)
        throw Error("cannot rename " + temporary + " to " + path);
}

RoutingStats RoutingStats::load(const std::string& path, int64_t n_layer, int64_t n_expert, double half_life) {
    std::ifstream in(path);
    if (!in) throw Error("cannot read expert statistics " + path);
    nlohmann::json doc;
    try {
        doc = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
        throw Error(path + ": not an expert statistics file: " + e.what());
    }
    if (!doc.is_object() || doc.value("format", "") != "k3-expert-stats" || !doc.contains("n_layer") ||
        !doc.contains("n_expert") || !doc.contains("scores") || !doc["scores"].is_array())
        throw Error(path + ": not an expert statistics file (expected format k3-expert-stats)");
    const int64_t file_layers = doc["n_layer"].get<int64_t>(), file_experts = doc["n_expert"].get<int64_t>();
    if (file_layers != n_layer || file_experts != n_expert)
        throw Error(path + ": expert statistics for " + std::to_string(file_layers) + " layers x " +
                    std::to_string(file_experts) + " experts, but the model has " + std::to_string(n_layer) +
                    " layers x " + std::to_string(n_expert) + " experts");
    RoutingStats stats(n_layer, n_expert, half_life);
    const nlohmann::json& scores = doc["scores"];
    if (int64_t(scores.size()) != n_layer) throw Error(path + ": scores has " + std::to_string(scores.size()) + " rows, expected " + std::to_string(n_layer));
    for (int64_t il = 0; il < n_layer; ++il) {
        const nlohmann::json& row = scores[size_t(il)];
        if (!row.is_array() || int64_t(row.size()) != n_expert)
            throw Error(path + ": scores row " + std::to_string(il) + " does not hold " + std::to_string(n_expert) + " numbers");
        for (int32_t e = 0; e < n_expert; ++e) {
            if (!row[size_t(e)].is_number() || row[size_t(e)].get<double>() < 0)
                throw Error(path + ": score [" + std::to_string(il) + "][" + std::to_string(e) + "] is not a non-negative number");
            stats.value_[stats.index(il, e)] = row[size_t(e)].get<double>();
        }
    }
    return stats;
}

}  // namespace k3::runtime
