// `k3 eval --dump`: the intermediates are named as llama.cpp's kimi-k3 graph names them in its
// callbacks (src/models/kimi-k3.cpp: "attn_norm-3", "l_out-3", "ffn_moe_out-4", ...), one file
// per name, so a dump diffs against the reference's name by name; result_output is the logits.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>

#include "support/test_support.h"

namespace k3::cli {
namespace {

// fixtures/README.md §1: 9 layers, MLA at 3, 7, 8 (gated), KDA elsewhere, layer 0 dense, layers
// 1-8 latent MoE with a shared expert.
std::set<std::string> tiny_k3_graph_names() {
    std::set<std::string> names = {"inp_embd", "result_norm", "result_output"};
    for (int il = 0; il < 9; ++il) {
        const auto add = [&](const char* name) {
            std::string full = name;
            full += '-';
            full += std::to_string(il);
            names.insert(std::move(full));
        };
        for (const char* name : {"attn_norm", "prefix_sum_attn", "ffn_norm", "ffn_out", "l_out"}) add(name);
        if (il == 3 || il == 7 || il == 8) {
            add("mla_gated");
            add("mla_out");
        } else {
            add("kda_out");
        }
        if (il > 0)
            for (const char* name : {"ffn_moe_logits", "ffn_moe_out", "ffn_shexp"}) add(name);
    }
    return names;
}

TEST(EvalDump, NamesFollowLlamaCppsGraphAndResultOutputIsTheLogits) {
    testing::ScratchDir dir;
    const testing::CommandResult r =
        testing::run_k3({"eval", "-m", testing::fixture("tiny-k3/model.gguf"), "--tokens", "1,2,3,4,5", "-t", "2",
                         "--logits-out", dir.file("logits.f32"), "--dump", "all", "--dump-dir", dir.path()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::set<std::string> dumped;
    for (const auto& entry : std::filesystem::directory_iterator(dir.path()))
        if (entry.path().extension() == ".f32" && entry.path().stem() != "logits") dumped.insert(entry.path().stem());
    EXPECT_EQ(dumped, tiny_k3_graph_names());
    EXPECT_EQ(testing::read_bytes(dir.file("result_output.f32")), testing::read_bytes(dir.file("logits.f32")));
    // Rows of [5 tokens][n_embd 64] floats.
    EXPECT_EQ(std::filesystem::file_size(dir.file("l_out-8.f32")), 5u * 64u * sizeof(float));
    EXPECT_EQ(std::filesystem::file_size(dir.file("kda_out-0.f32")), 5u * 64u * sizeof(float));
}

}  // namespace
}  // namespace k3::cli
