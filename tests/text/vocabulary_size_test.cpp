// A GGUF whose vocabulary is absurd for its model (issue #18: 10 million tokens in a small file
// took gigabytes and half a minute to index) is refused before any table is built.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "support/test_support.h"
#include "text/tokenizer.h"
#include "util/error.h"

namespace {

using k3::testing::fixture;

TEST(VocabularySize, MoreTokensThanEmbeddingRowsIsRefused) {
    const std::string model = fixture("tiny-k3/model.gguf");
    k3::testing::ScratchDir dir;
    const std::string path = dir.file("huge-vocabulary.gguf");
    {
        auto in = k3::gguf::GgufFile::open(model);
        k3::gguf::GgufWriter out(path);
        for (const auto& [key, value] : in->metadata())
            if (key != "tokenizer.ggml.tokens" && key != "tokenizer.ggml.token_type") out.set(key, value);
        std::vector<std::string> tokens(1'000'000);
        for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = std::to_string(i);
        out.set_string_array("tokenizer.ggml.tokens", tokens);
        out.set_i32_array("tokenizer.ggml.token_type", std::vector<int32_t>(tokens.size(), 1));
        for (const k3::gguf::TensorInfo& t : in->tensors()) out.add_tensor(t.name, t.type, t.ne);
        for (const k3::gguf::TensorInfo& t : in->tensors()) out.write_tensor(t.name, t.data, t.n_bytes);
        out.finish();
    }
    auto file = k3::gguf::GgufFile::open(path);
    const auto start = std::chrono::steady_clock::now();
    try {
        k3::text::Tokenizer::from_gguf(*file);
        FAIL() << "a 1,000,000-token vocabulary for 1024 embedding rows was accepted";
    } catch (const k3::Error& e) {
        EXPECT_NE(std::string(e.what()).find("tokenizer.ggml.tokens lists 1000000 tokens, more than the 1024 rows of "
                                             "token_embd.weight"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 1.0);
    // The fixture itself, whose vocabulary fits, still loads.
    auto fits = k3::gguf::GgufFile::open(model);
    EXPECT_EQ(k3::text::Tokenizer::from_gguf(*fits).n_vocab(), 1024);
}

}  // namespace
