// The safetensors reader: valid files parse to the right views; every kind of damaged header
// is rejected with an error that says what is wrong.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "convert/safetensors.h"
#include "support/test_support.h"
#include "util/error.h"

namespace k3::convert {
namespace {

// An 8-byte little-endian header length, the header text, then `data`.
std::vector<uint8_t> safetensors_image(const std::string& header, const std::vector<uint8_t>& data) {
    std::string bytes(8, '\0');
    for (int i = 0; i < 8; ++i) bytes[size_t(i)] = char(uint64_t(header.size()) >> (8 * i));
    bytes += header;
    bytes.append(data.begin(), data.end());
    return std::vector<uint8_t>(bytes.begin(), bytes.end());
}

std::string parse_error(const std::vector<uint8_t>& image) {
    try {
        parse_safetensors(image.data(), image.size(), "damaged.safetensors");
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

TEST(Safetensors, ParsesTensorsSortedByNameWithViewsIntoTheData) {
    // b: BF16 [2] at 0..4 (1.0, -2.0); a: F32 [1, 1] at 4..8 (0.5); U8 [0] empty.
    const std::vector<uint8_t> data = {0x80, 0x3f, 0x00, 0xc0, 0x00, 0x00, 0x00, 0x3f};
    const auto image = safetensors_image(
        R"({"__metadata__":{"format":"pt"},"b":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]},)"
        R"("a":{"dtype":"F32","shape":[1,1],"data_offsets":[4,8]},"e":{"dtype":"U8","shape":[0],"data_offsets":[8,8]}}   )",
        data);
    const std::vector<SafeTensor> tensors = parse_safetensors(image.data(), image.size(), "ok");
    ASSERT_EQ(tensors.size(), 3u);
    EXPECT_EQ(tensors[0].name, "a");
    EXPECT_EQ(tensors[0].shape, (std::vector<int64_t>{1, 1}));
    EXPECT_EQ(tensors[0].data, image.data() + image.size() - 4);
    EXPECT_EQ(tensors[1].name, "b");
    EXPECT_EQ(tensors[1].dtype, Dtype::BF16);
    EXPECT_EQ(tensors[1].n_bytes, 4u);
    EXPECT_EQ(tensors[2].n_elements, 0);
    float a = 0, b[2] = {};
    read_f32(tensors[0], &a);
    read_f32(tensors[1], b);
    EXPECT_EQ(a, 0.5f);
    EXPECT_EQ(b[0], 1.0f);
    EXPECT_EQ(b[1], -2.0f);
}

struct Damage {
    const char* what;
    std::vector<uint8_t> image;
    const char* expected_message;
};

TEST(Safetensors, RejectsEveryDamagedHeaderWithAClearError) {
    const std::vector<uint8_t> eight(8);
    std::vector<uint8_t> long_length = safetensors_image("{}", {});
    long_length[0] = 200;
    const Damage corpus[] = {
        {"shorter than the length field", {1, 2, 3}, "too short for the 8-byte"},
        {"header length beyond the file", long_length, "header length 200 runs past the end of the file"},
        {"header not JSON", safetensors_image("{\"a\":", eight), "not valid JSON"},
        {"header not an object", safetensors_image("[1,2]", eight), "not a JSON object"},
        {"entry not an object", safetensors_image(R"({"a":3})", eight), "tensor a: entry is not a JSON object"},
        {"unknown dtype", safetensors_image(R"({"a":{"dtype":"Q4","shape":[2],"data_offsets":[0,2]}})", eight), "unknown dtype \"Q4\""},
        {"missing offsets", safetensors_image(R"({"a":{"dtype":"U8","shape":[2]}})", eight), "missing \"data_offsets\""},
        {"negative dimension", safetensors_image(R"({"a":{"dtype":"U8","shape":[-2],"data_offsets":[0,2]}})", eight),
         "shape entry must be a non-negative integer"},
        {"fractional dimension", safetensors_image(R"({"a":{"dtype":"U8","shape":[1.5],"data_offsets":[0,2]}})", eight),
         "shape entry must be a non-negative integer"},
        {"offsets past the data", safetensors_image(R"({"a":{"dtype":"U8","shape":[9],"data_offsets":[0,9]}})", eight),
         "data_offsets end 9 is past the data section (8 bytes)"},
        {"offsets backwards", safetensors_image(R"({"a":{"dtype":"U8","shape":[0],"data_offsets":[4,2]}})", eight), "run backwards"},
        {"offsets not a pair", safetensors_image(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0]}})", eight), "[begin, end]"},
        {"shape x dtype != bytes", safetensors_image(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,6]}})", eight),
         "needs 8 bytes but data_offsets span 6"},
        {"element count overflow",
         safetensors_image(R"({"a":{"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", eight), "too many elements"},
        {"byte count overflow",
         safetensors_image(R"({"a":{"dtype":"F64","shape":[4611686018427387904],"data_offsets":[0,8]}})", eight), "more than 2^64"},
        {"overlapping tensors",
         safetensors_image(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},"b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}})", eight),
         "tensors a and b overlap at data offset 2"},
        {"metadata not an object", safetensors_image(R"({"__metadata__":[]})", eight), "__metadata__ is not a JSON object"},
    };
    for (const Damage& d : corpus) {
        const std::string message = parse_error(d.image);
        EXPECT_NE(message.find(d.expected_message), std::string::npos) << d.what << ": " << message;
        EXPECT_NE(message.find("damaged.safetensors"), std::string::npos) << d.what << ": the error must name the file";
    }
}

TEST(Safetensors, Fp8TensorsParseButCannotBeReadAsNumbers) {
    const auto image = safetensors_image(R"({"w":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,2]}})", {1, 2});
    const std::vector<SafeTensor> tensors = parse_safetensors(image.data(), image.size(), "fp8");
    float out[2];
    try {
        read_f32(tensors[0], out);
        FAIL() << "F8 data was read";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("FP8 checkpoints are unsupported"), std::string::npos) << e.what();
    }
}

class ShardedCheckpoint : public ::testing::Test {
protected:
    void write_shard(const std::string& name, const std::string& header, size_t data_size) {
        const auto image = safetensors_image(header, std::vector<uint8_t>(data_size));
        testing::write_bytes(dir.file(name), image.data(), image.size());
    }
    void write_index(const std::string& weight_map) {
        const std::string index = R"({"metadata":{},"weight_map":)" + weight_map + "}";
        testing::write_bytes(dir.file("model.safetensors.index.json"), index.data(), index.size());
    }
    std::string open_error() {
        try {
            SafetensorsCheckpoint::open(dir.path());
        } catch (const Error& e) {
            return e.what();
        }
        return "(no error)";
    }
    testing::ScratchDir dir;
};

TEST_F(ShardedCheckpoint, OrdersShardsByFileNameAndNamesWithinEach) {
    write_shard("model-00002-of-00002.safetensors", R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})", 1);
    write_shard("model-00001-of-00002.safetensors",
                R"({"z":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"c":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})", 2);
    write_index(R"({"a":"model-00002-of-00002.safetensors","z":"model-00001-of-00002.safetensors","c":"model-00001-of-00002.safetensors"})");
    const auto checkpoint = SafetensorsCheckpoint::open(dir.path());
    std::vector<std::string> names;
    for (const SafeTensor& t : checkpoint->tensors()) names.push_back(t.name);
    EXPECT_EQ(names, (std::vector<std::string>{"c", "z", "a"}));
    ASSERT_NE(checkpoint->find("a"), nullptr);
    EXPECT_EQ(checkpoint->find("a")->shard, 1u);
    EXPECT_EQ(checkpoint->find("missing"), nullptr);
}

TEST_F(ShardedCheckpoint, RejectsAnIndexThatDisagreesWithTheShards) {
    write_shard("s1.safetensors", R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})", 1);
    write_shard("s2.safetensors", R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})", 1);
    write_index(R"({"a":"s1.safetensors","b":"s1.safetensors"})");
    EXPECT_NE(open_error().find("lists tensor b in s1.safetensors, which lacks it"), std::string::npos) << open_error();
    write_index(R"({"a":"s1.safetensors","x":"s2.safetensors"})");
    EXPECT_NE(open_error().find("tensor a is also in"), std::string::npos) << open_error();
    write_index(R"({"a":"../s1.safetensors"})");
    EXPECT_NE(open_error().find("outside the checkpoint"), std::string::npos) << open_error();
}

TEST_F(ShardedCheckpoint, RejectsAShardTensorTheIndexDoesNotList) {
    write_shard("s1.safetensors", R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"b":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})", 2);
    write_index(R"({"a":"s1.safetensors"})");
    EXPECT_NE(open_error().find("tensor b is not listed in"), std::string::npos) << open_error();
}

}  // namespace
}  // namespace k3::convert
