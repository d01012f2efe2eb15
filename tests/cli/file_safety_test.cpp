// convert, quantize and mock never leave a partial file behind (SIGINT/SIGTERM remove it and
// exit 128 + the signal), keep an existing output unless --force, and say only errors with -q;
// quantize reports each tensor's type change, its fallbacks and the sizes.
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "support/test_support.h"
#include "tensor/tensor_type.h"

namespace k3::cli {
namespace {

namespace fs = std::filesystem;
using testing::CommandResult;
using testing::fixture;

// One command per writer, each writing OUT (the last argument after "-o", or the second positional).
std::vector<std::vector<std::string>> writing_commands(const std::string& out) {
    return {{"convert", fixture("hf/tiny-a/checkpoint"), "-o", out, "--outtype", "f32"},
            {"quantize", fixture("tiny-k3/model.gguf"), out, "q8_0"},
            {"mock", "-o", out, "--seed", "3"}};
}

std::vector<std::string> files_in(const testing::ScratchDir& dir) {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir.path())) names.push_back(entry.path().filename().string());
    return names;
}

// The signal is pending when k3 starts, so it arrives when the command installs its handler,
// before the first tensor; the first write then creates the .partial and stops.
TEST(FileSafety, SigintLeavesNeitherOutputNorPartial) {
    for (int signal : {SIGINT, SIGTERM}) {
        testing::ScratchDir dir;
        for (const std::vector<std::string>& command : writing_commands(dir.file("out.gguf"))) {
            const CommandResult r = testing::run_k3_interrupted(command, signal);
            EXPECT_EQ(r.exit_code, 128 + signal) << command[0] << ": " << r.err;
            EXPECT_NE(r.err.find(signal == SIGINT ? "interrupted by SIGINT" : "interrupted by SIGTERM"), std::string::npos)
                << r.err;
            EXPECT_EQ(files_in(dir), std::vector<std::string>{}) << command[0];
        }
    }
}

// Stopped while it writes: the bench preset is ~3 GB, so SIGTERM comes long before the end.
TEST(FileSafety, SigtermWhileWritingRemovesThePartial) {
    testing::ScratchDir dir;
    const std::string out = dir.file("big.gguf");
    const CommandResult r = testing::run_k3_interrupted({"mock", "--preset", "bench", "-o", out, "-t", "1", "-q"}, SIGTERM,
                                                        [&] { return fs::exists(out + ".partial"); });
    EXPECT_EQ(r.exit_code, 143) << r.err;
    EXPECT_EQ(files_in(dir), std::vector<std::string>{});
}

TEST(FileSafety, ExistingOutputIsKeptWithoutForce) {
    testing::ScratchDir dir;
    const std::string out = dir.file("out.gguf");
    for (std::vector<std::string> command : writing_commands(out)) {
        testing::write_bytes(out, "keep me", 7);
        CommandResult r = testing::run_k3(command);
        EXPECT_EQ(r.exit_code, 1) << command[0];
        EXPECT_NE(r.err.find(out + " already exists; not overwriting it (--force to replace it)"), std::string::npos) << r.err;
        EXPECT_EQ(testing::read_text(out), "keep me") << command[0];
        EXPECT_EQ(files_in(dir), std::vector<std::string>{"out.gguf"}) << command[0];

        command.push_back("--force");
        r = testing::run_k3(command);
        ASSERT_EQ(r.exit_code, 0) << command[0] << ": " << r.err;
        EXPECT_GT(gguf::GgufFile::open(out)->tensors().size(), 0u) << command[0];
        EXPECT_EQ(files_in(dir), std::vector<std::string>{"out.gguf"}) << command[0];
    }
}

TEST(FileSafety, QuietPrintsNothing) {
    testing::ScratchDir dir;
    for (std::vector<std::string> command : writing_commands(dir.file("out.gguf"))) {
        command.insert(command.end(), {"-q", "--force"});
        const CommandResult r = testing::run_k3(command);
        ASSERT_EQ(r.exit_code, 0) << command[0] << ": " << r.err;
        EXPECT_EQ(r.out, "") << command[0];
        EXPECT_EQ(r.err, "") << command[0];
    }
}

// tiny-k3 is 64 wide (fixtures/README.md §1): no row is a whole number of q4_K's 256-element
// blocks, so every tensor q4_K would get falls back (to q5_0 as llama-quantize's does, or f16), and
// the report says so for each.
TEST(FileSafety, QuantizeReportsTypeChangesFallbacksAndSizes) {
    testing::ScratchDir dir;
    const std::string in_path = fixture("tiny-k3/model.gguf"), out_path = dir.file("q4k.gguf");
    const CommandResult r = testing::run_k3({"quantize", in_path, out_path, "q4_K"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto in = gguf::GgufFile::open(in_path);
    const auto out = gguf::GgufFile::open(out_path);
    ASSERT_EQ(in->tensors().size(), out->tensors().size());
    size_t changed = 0;
    for (size_t i = 0; i < in->tensors().size(); ++i) {
        const gguf::TensorInfo& before = in->tensors()[i];
        const gguf::TensorInfo& after = out->tensors()[i];
        EXPECT_NE(after.type, tensor::Type::Q4_K) << after.name;
        if (after.type != before.type) {  // q5_0's blocks of 32, or f16 for rows they do not fit either
            EXPECT_EQ(after.type, before.ne[0] % 32 == 0 ? tensor::Type::Q5_0 : tensor::Type::F16) << after.name;
        }
        if (after.type == before.type) {
            EXPECT_EQ(r.err.find("  " + before.name + " "), std::string::npos) << before.name << " kept its type";
            continue;
        }
        ++changed;
        const size_t line_start = r.err.find("  " + before.name + " ");
        ASSERT_NE(line_start, std::string::npos) << before.name;
        const std::string line = r.err.substr(line_start, r.err.find('\n', line_start) - line_start);
        EXPECT_NE(line.find(std::string(tensor::traits(before.type).name) + " "), std::string::npos) << line;
        EXPECT_NE(line.find("-> " + std::string(tensor::traits(after.type).name)), std::string::npos) << line;
        EXPECT_NE(line.find("fallback: q4_K needs rows of a multiple of 256; this one has " + std::to_string(before.ne[0])),
                  std::string::npos)
            << line;
    }
    ASSERT_GT(changed, 0u);
    EXPECT_NE(r.err.find(std::to_string(changed) + " of " + std::to_string(in->tensors().size()) + " tensors re-encoded, " +
                         std::to_string(in->tensors().size() - changed) + " kept their type, " + std::to_string(changed) +
                         " fell back to a type their rows fit"),
              std::string::npos)
        << r.err;
}

}  // namespace
}  // namespace k3::cli
