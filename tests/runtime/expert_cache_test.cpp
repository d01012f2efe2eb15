// The expert cache's side of the ExpertSource contract (model/expert_source.h) on the model
// fixtures, under budgets of two and three experts: every expert a take_resident() batch hands
// out is byte for byte its rows of the mapped file until it is released, while the reads of the
// layer's other experts land and evict around it; each requested expert is handed out once.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>
#include <span>
#include <thread>
#include <tuple>
#include <vector>

#include "model/expert_source.h"
#include "model/model.h"
#include "runtime/expert_cache.h"
#include "support/test_support.h"

namespace k3::runtime {
namespace {

bool same_rows(const kernels::MatrixView& held, const kernels::MatrixView& in_file) {
    return held.type == in_file.type && held.cols == in_file.cols && held.rows == in_file.rows &&
           std::memcmp(held.data, in_file.data, size_t(in_file.rows) * in_file.row_stride) == 0;
}

bool same_expert(const model::ExpertMatrices& held, const model::ExpertMatrices& in_file) {
    return held.expert == in_file.expert && same_rows(held.gate, in_file.gate) && same_rows(held.up, in_file.up) &&
           same_rows(held.down, in_file.down);
}

class ExpertCacheContract : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(ExpertCacheContract, HandedOutExpertsKeepTheirBytesUntilReleased) {
    const auto& [name, budget_experts] = GetParam();
    const auto model = model::Model::load(testing::fixture(name + "/model.gguf"));
    const model::HParams& hp = model->hparams();
    const uint64_t capacity = uint64_t(budget_experts) * ExpertCache::largest_expert_bytes(model->file(), hp);
    ExpertCache cache(model->file(), hp, capacity, RoutingStats(hp.n_layer, hp.n_expert));

    std::mt19937 rng(7);
    std::vector<int32_t> experts;
    std::vector<int64_t> counts;
    for (int round = 0; round < 12; ++round)
        for (int64_t il = 0; il < hp.n_layer; ++il) {
            const model::MoeWeights* w = model->weights().layers[size_t(il)].moe ? &*model->weights().layers[size_t(il)].moe : nullptr;
            if (!w) continue;
            SCOPED_TRACE("round " + std::to_string(round) + ", layer " + std::to_string(il));
            // Each expert with probability one half: more than the budget holds, most rounds.
            experts.clear();
            counts.clear();
            for (int32_t e = 0; e < hp.n_expert; ++e)
                if (rng() % 2) {
                    experts.push_back(e);
                    counts.push_back(1 + int64_t(rng() % 4));
                }
            cache.request(il, experts, counts);
            std::vector<int> handed_out(size_t(hp.n_expert), 0);
            for (std::span<const model::ExpertMatrices> batch; !(batch = cache.take_resident()).empty();) {
                for (const model::ExpertMatrices& expert : batch) {
                    ++handed_out[size_t(expert.expert)];
                    ASSERT_TRUE(same_expert(expert, model::mapped_expert(*w, expert.expert))) << "expert " << expert.expert;
                }
                // Reads of the layer's other experts are in flight meanwhile: give them time to
                // land, then the batch must still hold its own bytes.
                std::this_thread::sleep_for(std::chrono::microseconds(200));
                for (const model::ExpertMatrices& expert : batch)
                    ASSERT_TRUE(same_expert(expert, model::mapped_expert(*w, expert.expert)))
                        << "expert " << expert.expert << " changed while handed out";
                for (const model::ExpertMatrices& expert : batch) cache.release(expert.expert);
            }
            for (int32_t e = 0; e < hp.n_expert; ++e) {
                const bool requested = std::find(experts.begin(), experts.end(), e) != experts.end();
                ASSERT_EQ(handed_out[size_t(e)], requested ? 1 : 0) << "expert " << e;
            }
        }
    const ExpertCacheCounters counters = cache.counters();
    EXPECT_LE(counters.peak_bytes, capacity);
    EXPECT_GT(counters.bytes_read, 4 * capacity);  // experts were evicted and read again
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ExpertCacheContract,
                         ::testing::Combine(::testing::Values("tiny-k3-mxfp4", "tiny-k3-q4k"), ::testing::Values(2, 3)),
                         [](const auto& info) {
                             std::string name = std::get<0>(info.param) + "_budget_" + std::to_string(std::get<1>(info.param));
                             for (char& ch : name)
                                 if (ch == '-') ch = '_';
                             return name;
                         });

}  // namespace
}  // namespace k3::runtime
