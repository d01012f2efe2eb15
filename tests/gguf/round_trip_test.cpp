// GgufWriter -> GgufFile: every value type (nested arrays too), every tensor type, alignment,
// split output and the writer's refusal of inconsistent use.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <limits>
#include <random>

#include "gguf/gguf_file.h"
#include "gguf/gguf_value.h"
#include "gguf/gguf_writer.h"
#include "support/test_support.h"
#include "util/error.h"

namespace k3::gguf {
namespace {

using tensor::Type;

Value u(ValueType t, uint64_t v) { return Value{t, v}; }
Value i(ValueType t, int64_t v) { return Value{t, v}; }
Value array(ValueType element, std::vector<Value> items) { return Value{ValueType::ARRAY, Array{element, std::move(items)}}; }

// Every value type with its extreme values, in a fixed order.
std::vector<std::pair<std::string, Value>> all_value_types() {
    using VT = ValueType;
    return {
        {"t.u8", u(VT::UINT8, 255)},
        {"t.i8", i(VT::INT8, -128)},
        {"t.u16", u(VT::UINT16, 65535)},
        {"t.i16", i(VT::INT16, -32768)},
        {"t.u32", u(VT::UINT32, 4294967295u)},
        {"t.i32", i(VT::INT32, std::numeric_limits<int32_t>::min())},
        {"t.f32", Value{VT::FLOAT32, double(1.0f / 3.0f)}},
        {"t.bool", Value{VT::BOOL, true}},
        {"t.string", Value{VT::STRING, std::string("K3 ✓ \"quoted\"\n\0inside", 22)}},
        {"t.empty_string", Value{VT::STRING, std::string()}},
        {"t.u64", u(VT::UINT64, std::numeric_limits<uint64_t>::max())},
        {"t.i64", i(VT::INT64, std::numeric_limits<int64_t>::min())},
        {"t.f64", Value{VT::FLOAT64, 1e300}},
        {"t.array_i32", array(VT::INT32, {i(VT::INT32, 0), i(VT::INT32, -1), i(VT::INT32, 7)})},
        {"t.array_f32", array(VT::FLOAT32, {Value{VT::FLOAT32, 0.5}, Value{VT::FLOAT32, -2.0}})},
        {"t.array_bool", array(VT::BOOL, {Value{VT::BOOL, false}, Value{VT::BOOL, true}})},
        {"t.array_string", array(VT::STRING, {Value{VT::STRING, std::string("a b")}, Value{VT::STRING, std::string()}})},
        {"t.array_u8", array(VT::UINT8, {u(VT::UINT8, 1), u(VT::UINT8, 200)})},
        {"t.array_u64", array(VT::UINT64, {u(VT::UINT64, 1ull << 63)})},
        {"t.array_empty", array(VT::FLOAT64, {})},
        {"t.array_nested", array(VT::ARRAY, {array(VT::INT16, {i(VT::INT16, -3)}), array(VT::INT16, {}),
                                             array(VT::INT16, {i(VT::INT16, 1), i(VT::INT16, 2)})})},
        {"t.array_nested2", array(VT::ARRAY, {array(VT::ARRAY, {array(VT::STRING, {Value{VT::STRING, std::string("deep")}})})})},
    };
}

std::vector<uint8_t> random_bytes(size_t n, std::mt19937& rng) {
    std::vector<uint8_t> bytes(n);
    for (uint8_t& b : bytes) b = uint8_t(rng());
    return bytes;
}

TEST(GgufRoundTrip, EveryValueTypeReadsBackExactly) {
    testing::ScratchDir dir;
    const std::string path = dir.file("values.gguf");
    GgufWriter writer(path);
    for (const auto& [key, value] : all_value_types()) writer.set(key, value);
    writer.set_u32("t.u32", 17);  // setting again replaces in place
    writer.set_string_array("t.strings", {"x", "yy"});
    writer.set_i32_array("t.ints", {-5, 6});
    writer.set_f32_array("t.floats", {0.25f});
    writer.set_bool("t.flag", false);
    writer.set_f32("t.eps", 1e-5f);
    writer.set_i32("t.neg", -9);
    EXPECT_EQ(writer.finish(), std::vector<std::string>{path});

    const auto file = GgufFile::open(path);
    EXPECT_EQ(file->version(), 3u);
    const auto expected = all_value_types();
    ASSERT_EQ(file->metadata().size(), expected.size() + 6);
    for (size_t k = 0; k < expected.size(); ++k) {
        EXPECT_EQ(file->metadata()[k].first, expected[k].first);
        if (expected[k].first == "t.u32") continue;
        EXPECT_TRUE(file->metadata()[k].second == expected[k].second) << expected[k].first;
    }
    EXPECT_EQ(file->get_uint("t.u32"), 17u);
    EXPECT_EQ(file->get_uint("t.u64"), std::numeric_limits<uint64_t>::max());
    EXPECT_EQ(file->get_int("t.i64"), std::numeric_limits<int64_t>::min());
    EXPECT_EQ(file->get_float("t.eps"), double(1e-5f));
    EXPECT_EQ(file->get_bool("t.flag"), false);
    EXPECT_EQ(file->get_int("t.neg"), -9);
    EXPECT_EQ(file->get_string_array("t.strings"), (std::vector<std::string>{"x", "yy"}));
    EXPECT_EQ(file->get_int_array("t.ints"), (std::vector<int64_t>{-5, 6}));
    EXPECT_EQ(file->get_float_array("t.floats"), (std::vector<float>{0.25f}));
    EXPECT_EQ(file->get_int_array("t.u8"), (std::vector<int64_t>{255}));  // scalar as one-element list
    EXPECT_EQ(file->get_uint("absent"), std::nullopt);
    EXPECT_THROW(file->get_uint("t.neg"), Error);      // negative asked for as unsigned
    EXPECT_THROW(file->get_int("t.u64"), Error);       // beyond int64
    EXPECT_THROW(file->get_string("t.u8"), Error);     // wrong type
    EXPECT_THROW(file->get_bool("t.string"), Error);
    EXPECT_THROW(file->get_int_array("t.array_string"), Error);
    EXPECT_TRUE(file->tensors().empty());
}

TEST(GgufRoundTrip, EveryTensorTypeKeepsBytesShapeAndAlignment) {
    testing::ScratchDir dir;
    std::mt19937 rng(5);
    for (uint32_t alignment : {32u, 64u, 1u}) {
        const std::string path = dir.file("tensors" + std::to_string(alignment) + ".gguf");
        std::vector<std::pair<std::string, std::vector<uint8_t>>> data;
        std::vector<std::vector<int64_t>> shapes;
        {
            GgufWriter writer(path, WriterOptions{alignment, 0});
            writer.set_string("general.architecture", "test");
            for (uint32_t id = 0; id < 64; ++id) {
                const tensor::TypeTraits* t = tensor::find_type(id);
                if (!t) continue;
                std::vector<int64_t> ne = {int64_t(t->block_size) * 3, 2, 1 + id % 3};
                if (id % 2) ne.push_back(2);  // some 4-D
                const std::string name = "tensor." + std::string(t->name);
                writer.add_tensor(name, t->type, ne);
                int64_t n = 1;
                for (int64_t d : ne) n *= d;
                data.emplace_back(name, random_bytes(size_t(n / t->block_size) * t->block_bytes, rng));
                shapes.push_back(ne);
            }
            for (const auto& [name, bytes] : data) writer.write_tensor(name, bytes.data(), bytes.size());
            writer.finish();
        }
        const auto file = GgufFile::open(path);
        EXPECT_EQ(file->get_uint("general.alignment").value_or(32), alignment == 32 ? 32u : alignment);
        EXPECT_EQ(file->find("general.alignment") != nullptr, alignment != 32);
        ASSERT_EQ(file->tensors().size(), data.size());
        for (size_t k = 0; k < data.size(); ++k) {
            const TensorInfo& t = file->tensors()[k];
            EXPECT_EQ(t.name, data[k].first);
            EXPECT_EQ(t.ne, shapes[k]);
            EXPECT_EQ(t.n_bytes, data[k].second.size());
            EXPECT_EQ(t.file_offset % alignment, 0u) << t.name;
            EXPECT_EQ(std::memcmp(t.data, data[k].second.data(), t.n_bytes), 0) << t.name;
            EXPECT_EQ(file->find_tensor(t.name), &t);
        }
    }
}

TEST(GgufRoundTrip, SplitOutputOpensFromAnyPartWithLlamaCppNamesAndKeys) {
    testing::ScratchDir dir;
    std::mt19937 rng(6);
    const std::string path = dir.file("model.gguf");
    std::vector<std::vector<uint8_t>> data;
    GgufWriter writer(path, WriterOptions{32, 4096});
    writer.set_string("general.architecture", "test");
    writer.set_u32("test.block_count", 3);
    const int64_t sizes[] = {256, 512, 3000, 64, 700, 700, 700};  // f32 elements; 3000*4 > the limit
    for (size_t k = 0; k < std::size(sizes); ++k) {
        writer.add_tensor("t" + std::to_string(k), Type::F32, {sizes[k]});
        data.push_back(random_bytes(size_t(sizes[k]) * 4, rng));
    }
    for (size_t k = 0; k < data.size(); ++k) writer.write_tensor("t" + std::to_string(k), data[k].data(), data[k].size());
    const std::vector<std::string> parts = writer.finish();
    ASSERT_GT(parts.size(), 2u);
    for (size_t p = 0; p < parts.size(); ++p) {
        char expected[64];
        std::snprintf(expected, sizeof expected, "model-%05zu-of-%05zu.gguf", p + 1, parts.size());
        EXPECT_EQ(parts[p], dir.file(expected));
        EXPECT_LE(std::filesystem::file_size(parts[p]), std::max<uint64_t>(4096, 3000 * 4 + 4096)) << parts[p];
    }
    EXPECT_FALSE(std::filesystem::exists(path));

    for (const std::string& opened : {parts[0], parts[1]}) {
        const auto file = GgufFile::open(opened);
        EXPECT_EQ(file->part_paths(), parts);
        EXPECT_EQ(file->get_uint("test.block_count"), 3u);
        EXPECT_EQ(file->get_uint("split.count"), parts.size());
        EXPECT_EQ(file->get_uint("split.no"), 0u);
        EXPECT_EQ(file->get_int("split.tensors.count"), int64_t(data.size()));
        EXPECT_EQ(file->find("split.no")->type, ValueType::UINT16);  // llama.cpp's key types
        EXPECT_EQ(file->find("split.tensors.count")->type, ValueType::INT32);
        ASSERT_EQ(file->tensors().size(), data.size());
        for (size_t k = 0; k < data.size(); ++k) {
            const TensorInfo& t = file->tensors()[k];
            EXPECT_EQ(std::memcmp(t.data, data[k].data(), data[k].size()), 0) << t.name;
        }
        EXPECT_EQ(file->tensors().front().part, 0u);
        EXPECT_EQ(file->tensors().back().part, parts.size() - 1);
    }
}

TEST(GgufWriter, RefusesInconsistentUseAndLeavesNoFileBehind) {
    testing::ScratchDir dir;
    const std::string path = dir.file("bad.gguf");
    {
        GgufWriter writer(path);
        writer.add_tensor("a", Type::F32, {4});
        writer.add_tensor("b", Type::Q8_0, {64, 2});
        EXPECT_THROW(writer.add_tensor("a", Type::F32, {4}), Error);          // duplicate
        EXPECT_THROW(writer.add_tensor("c", Type::Q8_0, {33}), Error);        // not whole blocks
        EXPECT_THROW(writer.add_tensor("d", Type::F32, {1, 1, 1, 1, 1}), Error);  // 5-D
        const float four[4] = {1, 2, 3, 4};
        EXPECT_THROW(writer.write_tensor("b", four, 16), Error);              // out of order
        EXPECT_THROW(writer.write_tensor("a", four, 12), Error);              // wrong size
        writer.write_tensor("a", four, 16);
        EXPECT_THROW(writer.finish(), Error);                                 // "b" never written
    }
    EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

}  // namespace
}  // namespace k3::gguf
