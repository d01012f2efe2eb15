// The IQ mixtures choose, tensor by tensor, the types llama-quantize chose for a 256-wide mock K3
// with an imatrix (tests/convert/data/iq-mixtures.llama-quantize.json, made as it says).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "convert/quant_mixture.h"
#include "gguf/gguf_file.h"
#include "support/test_support.h"

namespace k3::convert {
namespace {

TEST(QuantMixtureIq, ChoosesLlamaQuantizesTypes) {
    testing::ScratchDir dir;
    const auto mock = testing::run_k3({"mock", "-o", dir.file("mock9.gguf"), "--embd", "256", "--layers", "9", "--experts", "4",
                                       "--experts-used", "2", "--expert-ff", "256", "--latent", "0", "--ff", "256",
                                       "--vocab", "512", "-q"});
    ASSERT_EQ(mock.exit_code, 0) << mock.err;
    const auto file = gguf::GgufFile::open(dir.file("mock9.gguf"));
    std::vector<MixtureTensor> tensors;
    for (const gguf::TensorInfo& t : file->tensors()) tensors.push_back({t.name, t.ne, t.type});
    MixtureModel model;
    model.n_layer = int(file->get_uint("kimi-k3.block_count").value());
    model.n_expert = int(file->get_uint("kimi-k3.expert_count").value());
    const std::vector<int64_t> kv = file->get_int_array("kimi-k3.attention.head_count_kv").value();
    model.n_gqa = kv[0] > 0 ? int(file->get_uint("kimi-k3.attention.head_count").value() / kv[0]) : 0;
    model.has_imatrix = true;

    std::ifstream in(std::string(K3_SOURCE_DIR) + "/tests/convert/data/iq-mixtures.llama-quantize.json");
    const nlohmann::json expected = nlohmann::json::parse(in)["types"];
    ASSERT_EQ(expected.size(), 12u);
    for (const auto& [name, types] : expected.items()) {
        const std::optional<Mixture> mixture = parse_mixture(name);
        ASSERT_TRUE(mixture) << name;
        const QuantMixture plan(*mixture, model, tensors);
        for (size_t i = 0; i < tensors.size(); ++i)
            EXPECT_EQ(std::string(tensor::traits(plan.choose_type(i).type).name), types.at(tensors[i].name).get<std::string>())
                << name << ": " << tensors[i].name;
    }
}

}  // namespace
}  // namespace k3::convert
