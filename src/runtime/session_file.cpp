#include "runtime/session_file.h"

#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "gguf/gguf_file.h"
#include "runtime/engine.h"
#include "util/error.h"

namespace k3::runtime {

namespace {

constexpr std::array<char, 8> kMagic = {'K', '3', 'S', 'E', 'S', 'S', 'N', '1'};
enum class LayerKind : uint8_t { none = 0, kda = 1, mla = 2 };

uint64_t fnv1a(const uint8_t* bytes, size_t n, uint64_t hash = 0xcbf29ce484222325ull) {
    for (size_t i = 0; i < n; ++i) hash = (hash ^ bytes[i]) * 0x100000001b3ull;
    return hash;
}

class Writer {
public:
    template <typename T>
    void put(const T& value) { put_bytes(&value, sizeof value); }
    void put_floats(const std::vector<float>& values) {
        put(uint64_t(values.size()));
        put_bytes(values.data(), values.size() * sizeof(float));
    }
    void put_bytes(const void* data, size_t n) {
        const size_t at = bytes_.size();
        bytes_.resize(at + n);
        if (n) std::memcpy(bytes_.data() + at, data, n);
    }
    const std::vector<uint8_t>& bytes() const { return bytes_; }

private:
    std::vector<uint8_t> bytes_;
};

// Reads a file's bytes in order, every length checked against what is left.
class Reader {
public:
    Reader(std::string path, std::vector<uint8_t> bytes) : path_(std::move(path)), bytes_(std::move(bytes)) {}
    template <typename T>
    T get(const char* what) {
        T value;
        std::memcpy(&value, take(sizeof value, what), sizeof value);
        return value;
    }
    std::vector<float> get_floats(const char* what) {
        const uint64_t n = get<uint64_t>(what);
        if (n > left() / sizeof(float)) fail(std::string(what) + " runs past the end");
        std::vector<float> values(n);
        std::memcpy(values.data(), take(n * sizeof(float), what), n * sizeof(float));
        return values;
    }
    size_t offset() const { return offset_; }
    size_t left() const { return bytes_.size() - offset_; }
    const std::vector<uint8_t>& bytes() const { return bytes_; }
    [[noreturn]] void fail(const std::string& what) const {
        throw Error(path_ + ": " + what + " (at byte " + std::to_string(offset_) + ")");
    }

private:
    const uint8_t* take(size_t n, const char* what) {
        if (n > left()) fail(std::string("truncated in ") + what);
        const uint8_t* p = bytes_.data() + offset_;
        offset_ += n;
        return p;
    }
    std::string path_;
    std::vector<uint8_t> bytes_;
    size_t offset_ = 0;
};

std::vector<uint8_t> read_bytes(const std::string& path, size_t limit) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(path + ": cannot open: " + std::strerror(errno));
    std::vector<uint8_t> bytes(limit);
    in.read(reinterpret_cast<char*>(bytes.data()), std::streamsize(limit));
    bytes.resize(size_t(in.gcount()));
    return bytes;
}

// Checks the magic and the identity; leaves the reader at the token count.
void read_header(Reader& reader, uint64_t identity) {
    if (reader.get<std::array<char, kMagic.size()>>("the magic") != kMagic) reader.fail("not a k3 session file");
    if (reader.get<uint64_t>("the model identity") != identity)
        reader.fail("computed by another model (its metadata and tensor table differ)");
}

std::vector<int32_t> read_tokens(Reader& reader) {
    const uint64_t n = reader.get<uint64_t>("the token count");
    if (n > reader.left() / sizeof(int32_t)) reader.fail("the token list runs past the end");
    std::vector<int32_t> tokens(n);
    for (int32_t& token : tokens) token = reader.get<int32_t>("the tokens");
    return tokens;
}

}  // namespace

uint64_t model_identity(const gguf::GgufFile& file) {
    std::map<uint32_t, const gguf::TensorInfo*> first_in_part;  // the tensor with the lowest offset per part
    for (const gguf::TensorInfo& t : file.tensors()) {
        const gguf::TensorInfo*& first = first_in_part[t.part];
        if (!first || t.file_offset < first->file_offset) first = &t;
    }
    uint64_t hash = fnv1a(nullptr, 0);
    for (const auto& [part, t] : first_in_part) hash = fnv1a(t->data - t->file_offset, t->file_offset, hash);
    return hash;
}

uint64_t write_session_file(const std::string& path, const SessionState& state, uint64_t identity) {
    Writer w;
    w.put(kMagic);
    w.put(identity);
    w.put(uint64_t(state.tokens.size()));
    w.put_bytes(state.tokens.data(), state.tokens.size() * sizeof(int32_t));
    w.put(uint64_t(state.sequence.layers.size()));
    for (const model::LayerState& layer : state.sequence.layers) {
        if (layer.kda) {
            w.put(LayerKind::kda);
            w.put_floats(layer.kda->conv);
            w.put_floats(layer.kda->recurrent);
        } else if (layer.mla.row_width() > 0) {
            w.put(LayerKind::mla);
            w.put(uint64_t(layer.mla.row_width()));
            w.put(uint64_t(layer.mla.size()));
            w.put(uint64_t(layer.mla.size() * layer.mla.row_width()));
            for (int64_t i = 0; i < layer.mla.size(); ++i)
                w.put_bytes(layer.mla.row(i), size_t(layer.mla.row_width()) * sizeof(float));
        } else {
            w.put(LayerKind::none);
        }
    }
    w.put(fnv1a(w.bytes().data(), w.bytes().size()));

    const std::string temp = path + ".tmp" + std::to_string(::getpid());
    std::FILE* out = std::fopen(temp.c_str(), "wb");
    if (!out) throw Error(temp + ": cannot create: " + std::strerror(errno));
    bool ok = std::fwrite(w.bytes().data(), 1, w.bytes().size(), out) == w.bytes().size();
    ok = ok && std::fflush(out) == 0 && ::fsync(fileno(out)) == 0;
    const int err = errno;
    ok = std::fclose(out) == 0 && ok;
    if (!ok || std::rename(temp.c_str(), path.c_str()) != 0) {
        const std::string reason = std::strerror(ok ? errno : err);
        std::remove(temp.c_str());
        throw Error(path + ": cannot write: " + reason);
    }
    return w.bytes().size();
}

std::vector<int32_t> read_session_file_tokens(const std::string& path, uint64_t identity) {
    Reader probe(path, read_bytes(path, kMagic.size() + 2 * sizeof(uint64_t)));
    read_header(probe, identity);
    const uint64_t n = probe.get<uint64_t>("the token count");
    std::error_code ec;
    if (n > std::filesystem::file_size(path, ec) / sizeof(int32_t) || ec)
        probe.fail("the token list runs past the end");
    Reader reader(path, read_bytes(path, probe.offset() + n * sizeof(int32_t)));
    read_header(reader, identity);
    return read_tokens(reader);
}

SessionState read_session_file(const std::string& path, const Engine& engine, uint64_t identity) {
    std::error_code ec;
    const uint64_t size = std::filesystem::file_size(path, ec);
    if (ec) throw Error(path + ": cannot read: " + ec.message());
    Reader reader(path, read_bytes(path, size));
    if (reader.left() < kMagic.size() + 3 * sizeof(uint64_t)) reader.fail("too short for a session file");
    const size_t body = reader.bytes().size() - sizeof(uint64_t);
    uint64_t stored = 0;
    std::memcpy(&stored, reader.bytes().data() + body, sizeof stored);
    read_header(reader, identity);
    if (fnv1a(reader.bytes().data(), body) != stored) reader.fail("checksum mismatch: the file is corrupt");

    SessionState state{engine.empty_state(), read_tokens(reader)};
    state.sequence.position = int64_t(state.tokens.size());
    if (reader.get<uint64_t>("the layer count") != state.sequence.layers.size())
        reader.fail("layer count differs from the model's");
    for (size_t il = 0; il < state.sequence.layers.size(); ++il) {
        model::LayerState& layer = state.sequence.layers[il];
        const std::string where = "layer " + std::to_string(il);
        const auto kind = reader.get<LayerKind>("a layer kind");
        if (layer.kda) {
            if (kind != LayerKind::kda) reader.fail(where + " is not a KDA state");
            std::vector<float> conv = reader.get_floats("a KDA conv state");
            std::vector<float> recurrent = reader.get_floats("a KDA recurrent state");
            if (conv.size() != layer.kda->conv.size() || recurrent.size() != layer.kda->recurrent.size())
                reader.fail(where + ": KDA state sizes differ from the model's");
            layer.kda = std::make_shared<model::KdaState>(model::KdaState{std::move(conv), std::move(recurrent)});
        } else if (layer.mla.row_width() > 0) {
            if (kind != LayerKind::mla) reader.fail(where + " is not an MLA cache");
            if (reader.get<uint64_t>("an MLA row width") != uint64_t(layer.mla.row_width()))
                reader.fail(where + ": MLA row width differs from the model's");
            if (reader.get<uint64_t>("an MLA row count") != state.tokens.size())
                reader.fail(where + ": MLA rows differ from the token count");
            const std::vector<float> rows = reader.get_floats("MLA rows");
            if (rows.size() != state.tokens.size() * size_t(layer.mla.row_width()))
                reader.fail(where + ": MLA rows differ from the token count");
            layer.mla.append(rows.data(), int64_t(state.tokens.size()));
        } else if (kind != LayerKind::none) {
            reader.fail(where + ": unexpected state");
        }
    }
    if (reader.left() != sizeof(uint64_t)) reader.fail("unexpected bytes after the last layer");
    return state;
}

}  // namespace k3::runtime
