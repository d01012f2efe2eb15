// A corpus of damaged GGUFs, generated from a small valid file: truncated at every field and
// section boundary, counts and lengths made huge, offsets pushed past the end, type ids and
// n_dims out of range, duplicate names, a missing split part. Each must be refused with a
// one-line k3::Error (in process) and a non-zero exit with a one-line message from `k3 info`,
// never a crash, a hang, or memory proportional to a forged count.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstring>
#include <filesystem>
#include <algorithm>

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "support/test_support.h"
#include "util/error.h"

namespace k3::gguf {
namespace {

enum class FieldKind { Magic, Version, Count, Length, ValueType, NDims, Dim, TensorType, Offset, Bool };

struct Field {
    FieldKind kind;
    uint64_t offset;
    std::string label;
};

// Walks the known-good file independently of the reader and records where every field is.
class Walker {
public:
    explicit Walker(const std::vector<uint8_t>& bytes) : bytes_(bytes) {}

    void walk() {
        add(FieldKind::Magic, 4, "magic");
        add(FieldKind::Version, 4, "version");
        const uint64_t n_tensors = add(FieldKind::Count, 8, "tensor count");
        const uint64_t n_kv = add(FieldKind::Count, 8, "kv count");
        for (uint64_t k = 0; k < n_kv; ++k) {
            boundaries.push_back(pos_);
            const std::string key = string("key " + std::to_string(k));
            value(uint32_t(add(FieldKind::ValueType, 4, key + " type")), key);
        }
        for (uint64_t t = 0; t < n_tensors; ++t) {
            boundaries.push_back(pos_);
            const std::string name = string("tensor name " + std::to_string(t));
            const uint64_t n_dims = add(FieldKind::NDims, 4, name + " n_dims");
            for (uint64_t d = 0; d < n_dims; ++d) add(FieldKind::Dim, 8, name + " ne" + std::to_string(d));
            add(FieldKind::TensorType, 4, name + " type");
            tensor_offsets.push_back(fields.size());
            add(FieldKind::Offset, 8, name + " offset");
        }
        boundaries.push_back(pos_);  // end of the tensor infos
    }

    std::vector<Field> fields;
    std::vector<uint64_t> boundaries;
    std::vector<size_t> tensor_offsets;  // indices into fields

private:
    uint64_t add(FieldKind kind, int size, std::string label) {
        uint64_t v = 0;
        std::memcpy(&v, &bytes_[pos_], size_t(size));
        fields.push_back({kind, pos_, std::move(label)});
        pos_ += uint64_t(size);
        return v;
    }
    std::string string(const std::string& label) {
        const uint64_t n = add(FieldKind::Length, 8, label + " length");
        std::string s(reinterpret_cast<const char*>(&bytes_[pos_]), n);
        pos_ += n;
        return s;
    }
    void value(uint32_t type, const std::string& key) {
        static const int sizes[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
        if (type == uint32_t(ValueType::STRING)) {
            string(key);
        } else if (type == uint32_t(ValueType::ARRAY)) {
            const uint32_t element = uint32_t(add(FieldKind::ValueType, 4, key + " element type"));
            const uint64_t n = add(FieldKind::Count, 8, key + " count");
            for (uint64_t k = 0; k < n; ++k) value(element, key + "[" + std::to_string(k) + "]");
        } else if (type == uint32_t(ValueType::BOOL)) {
            add(FieldKind::Bool, 1, key);
        } else {
            pos_ += uint64_t(sizes[type]);
        }
    }

    const std::vector<uint8_t>& bytes_;
    uint64_t pos_ = 0;
};

// The undamaged file: every value kind (strings, nested arrays, bools) and three tensors whose
// data ends exactly at the end of the file (no trailing padding, so any truncation bites).
std::vector<uint8_t> make_base_file(const testing::ScratchDir& dir) {
    const std::string path = dir.file("base.gguf");
    GgufWriter writer(path, WriterOptions{64, 0});
    writer.set_string("general.architecture", "kimi-k3");
    writer.set_u32("test.dup_a", 1);
    writer.set_u32("test.dup_b", 2);
    writer.set_u32("kimi-k3.block_count", 2);
    writer.set_i32_array("kimi-k3.attention.head_count_kv", {0, 1});
    writer.set_bool("kimi-k3.expert_weights_norm", true);
    writer.set_f32("kimi-k3.attention.layer_norm_rms_epsilon", 1e-5f);
    writer.set("test.nested", Value{ValueType::ARRAY, Array{ValueType::ARRAY, {Value{ValueType::ARRAY, Array{ValueType::STRING,
                                     {Value{ValueType::STRING, std::string("ab")}}}}}}});
    writer.set_string_array("tokenizer.ggml.tokens", {"a", "b", "c"});
    writer.add_tensor("token_embd.weight", tensor::Type::F32, {8, 4});          // 128 bytes
    writer.add_tensor("blk.0.ffn_up.weight", tensor::Type::Q8_0, {64, 8});       // 544 bytes, padded to 576
    writer.add_tensor("blk.1.ffn_up.weight", tensor::Type::MXFP4, {64, 2, 32});  // 2176 bytes = 34 * 64
    const std::vector<uint8_t> f32(128, 0), blocks(544, 0x11), mx(2176, 0x22);
    writer.write_tensor("token_embd.weight", f32.data(), f32.size());
    writer.write_tensor("blk.0.ffn_up.weight", blocks.data(), blocks.size());
    writer.write_tensor("blk.1.ffn_up.weight", mx.data(), mx.size());
    writer.finish();
    return testing::read_bytes(path);
}

struct Damaged {
    std::string label;
    std::string path;
};

class Corpus {
public:
    explicit Corpus(const testing::ScratchDir& dir) : dir_(dir), base_(make_base_file(dir)) {
        walker_.walk();
        build();
    }
    std::vector<Damaged> files;
    size_t base_size() const { return base_.size(); }

private:
    void emit(const std::string& label, const std::vector<uint8_t>& bytes) {
        std::string name = "case" + std::to_string(files.size()) + ".gguf";
        testing::write_bytes(dir_.file(name), bytes.data(), bytes.size());
        files.push_back({label, dir_.file(name)});
    }
    void with_field(const Field& f, uint64_t value, int size, const std::string& what) {
        std::vector<uint8_t> bytes = base_;
        std::memcpy(&bytes[f.offset], &value, size_t(size));
        emit(f.label + " " + what, bytes);
    }
    void truncated(uint64_t size) {
        if (size >= base_.size()) return;
        emit("truncated at " + std::to_string(size), std::vector<uint8_t>(base_.begin(), base_.begin() + int64_t(size)));
    }
    void renamed(const std::string& from, const std::string& to, const std::string& label) {
        std::vector<uint8_t> bytes = base_;
        auto at = std::search(bytes.begin(), bytes.end(), from.begin(), from.end());
        ASSERT_NE(at, bytes.end());
        std::copy(to.begin(), to.end(), at);
        emit(label, bytes);
    }

    void build() {
        const uint64_t huge[] = {~0ull, 1ull << 62, 1ull << 40, uint64_t(base_.size())};
        for (const Field& f : walker_.fields) {
            truncated(f.offset);
            truncated(f.offset + 1);
            switch (f.kind) {
                case FieldKind::Magic: with_field(f, 0x47554747, 4, "GGUF -> GGUG"); break;
                case FieldKind::Version:
                    for (uint64_t v : {1ull, 4ull, 0x03000000ull}) with_field(f, v, 4, "= " + std::to_string(v));
                    break;
                case FieldKind::Count:
                case FieldKind::Length:
                    for (uint64_t v : huge) with_field(f, v, 8, "= " + std::to_string(v));
                    break;
                case FieldKind::ValueType:
                    for (uint64_t v : {13ull, 0xffffffffull}) with_field(f, v, 4, "= " + std::to_string(v));
                    break;
                case FieldKind::NDims:
                    for (uint64_t v : {0ull, 5ull, 0xffffffffull}) with_field(f, v, 4, "= " + std::to_string(v));
                    break;
                case FieldKind::Dim:
                    for (uint64_t v : {~0ull, 1ull << 62, 1ull << 33}) with_field(f, v, 8, "= " + std::to_string(v));
                    break;
                case FieldKind::TensorType:
                    for (uint64_t v : {4ull, 40ull, 0xffffffffull}) with_field(f, v, 4, "= " + std::to_string(v));
                    break;
                case FieldKind::Offset:
                    for (uint64_t v : {uint64_t(base_.size()), uint64_t(~0ull - 31), uint64_t(1ull << 63)}) with_field(f, v, 8, "= " + std::to_string(v));
                    break;
                case FieldKind::Bool: with_field(f, 2, 1, "= 2"); break;
            }
        }
        for (uint64_t b : walker_.boundaries) truncated(b);
        truncated(base_.size() - 1);

        // Offsets: misaligned, overlapping the previous tensor.
        const Field& second_offset = walker_.fields[walker_.tensor_offsets[1]];
        uint64_t offset;
        std::memcpy(&offset, &base_[second_offset.offset], 8);
        with_field(second_offset, offset + 1, 8, "misaligned");
        with_field(second_offset, 0, 8, "overlapping tensor 0");
        // Rows not whole blocks: the Q8_0 tensor's ne0 = 64 -> 48.
        const size_t before = files.size();
        for (const Field& f : walker_.fields)
            if (f.label == "blk.0.ffn_up.weight ne0") with_field(f, 48, 8, "not a multiple of the block");
        ASSERT_EQ(files.size(), before + 1);
        // Two dimensions of 2^32 each: the element count overflows int64.
        {
            std::vector<uint8_t> bytes = base_;
            int n_dims = 0;
            for (const Field& f : walker_.fields)
                if (f.label.starts_with("blk.1.ffn_up.weight ne")) {
                    std::memcpy(&bytes[f.offset], "\0\0\0\0\1\0\0\0", 8);  // 2^32
                    ++n_dims;
                }
            ASSERT_EQ(n_dims, 3);
            emit("element count overflow", bytes);
        }
        renamed("test.dup_b", "test.dup_a", "duplicate key");
        renamed("blk.1.ffn_up.weight", "blk.0.ffn_up.weight", "duplicate tensor name");
        // general.alignment = 64 in the base file; 0 and 3 are not powers of two.
        const std::string key = "general.alignment";
        const auto at = std::search(base_.begin(), base_.end(), key.begin(), key.end());
        ASSERT_NE(at, base_.end());
        const Field alignment{FieldKind::Count, uint64_t(at - base_.begin()) + key.size() + 4, key};
        with_field(alignment, 0, 4, "= 0");
        with_field(alignment, 3, 4, "= 3");
    }

    const testing::ScratchDir& dir_;
    std::vector<uint8_t> base_;
    Walker walker_{base_};
};

uint64_t peak_rss_kib(int who) {
    struct rusage usage {};
    getrusage(who, &usage);
    return uint64_t(usage.ru_maxrss);
}

bool one_line(const std::string& s) {
    const std::string trimmed = s.ends_with('\n') ? s.substr(0, s.size() - 1) : s;
    return !trimmed.empty() && trimmed.find('\n') == std::string::npos;
}

TEST(DamagedFiles, ReaderRefusesEveryOneWithALineNamingTheFileAndLittleMemory) {
    testing::ScratchDir dir;
    const Corpus corpus(dir);
    ASSERT_GT(corpus.files.size(), 200u);
    const uint64_t rss_before = peak_rss_kib(RUSAGE_SELF);
    for (const Damaged& d : corpus.files) {
        try {
            GgufFile::open(d.path);
            ADD_FAILURE() << d.label << ": accepted";
        } catch (const Error& e) {
            const std::string message = e.what();
            EXPECT_TRUE(one_line(message)) << d.label << ": " << message;
            EXPECT_NE(message.find(d.path), std::string::npos) << d.label << ": " << message;
        }
    }
    // A forged count must never turn into an allocation: the whole corpus stays far below the
    // gigabytes that any of its counts would claim.
    EXPECT_LT(peak_rss_kib(RUSAGE_SELF) - rss_before, 64u * 1024) << "KiB of peak RSS growth";
}

TEST(DamagedFiles, InfoExitsWithOneLineErrorNeverASignal) {
    testing::ScratchDir dir;
    const Corpus corpus(dir);
    for (const Damaged& d : corpus.files) {
        const testing::CommandResult r = testing::run_k3({"info", d.path});
        EXPECT_EQ(r.signal, 0) << d.label;
        EXPECT_EQ(r.exit_code, 1) << d.label << ": " << r.err;
        EXPECT_TRUE(one_line(r.err)) << d.label << ": " << r.err;
        EXPECT_TRUE(r.err.starts_with("k3 info: error: ")) << d.label << ": " << r.err;
    }
    EXPECT_LT(peak_rss_kib(RUSAGE_CHILDREN), 512u * 1024) << "KiB peak RSS of the largest k3 info run";
}

TEST(DamagedFiles, MissingSplitPartIsNamed) {
    testing::ScratchDir dir;
    GgufWriter writer(dir.file("m.gguf"), WriterOptions{32, 256});
    const std::vector<uint8_t> data(256, 0);
    for (int t = 0; t < 3; ++t) writer.add_tensor("t" + std::to_string(t), tensor::Type::F32, {64});
    for (int t = 0; t < 3; ++t) writer.write_tensor("t" + std::to_string(t), data.data(), data.size());
    const std::vector<std::string> parts = writer.finish();
    ASSERT_EQ(parts.size(), 3u);
    std::filesystem::remove(parts[1]);
    try {
        GgufFile::open(parts[0]);
        FAIL() << "opened with a part missing";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(parts[1]), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("part 2 of 3"), std::string::npos) << e.what();
    }
    const testing::CommandResult r = testing::run_k3({"info", parts[0]});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_TRUE(one_line(r.err)) << r.err;
}

TEST(DamagedFiles, BaseFileIsValid) {
    testing::ScratchDir dir;
    const Corpus corpus(dir);
    const auto file = GgufFile::open(dir.file("base.gguf"));
    EXPECT_EQ(file->tensors().size(), 3u);
    EXPECT_EQ(file->tensors().back().file_offset + file->tensors().back().n_bytes, corpus.base_size());
}

}  // namespace
}  // namespace k3::gguf
