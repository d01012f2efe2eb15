#include "convert/imatrix_file.h"

#include <cmath>
#include <cstring>
#include <memory>

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "util/error.h"
#include "util/mapped_file.h"

namespace k3::convert {
namespace {

constexpr const char* kSumsSuffix = ".in_sum2";
constexpr const char* kCountsSuffix = ".counts";

bool remove_suffix(std::string& name, const std::string& suffix) {
    if (name.size() <= suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
        return false;
    name.resize(name.size() - suffix.size());
    return true;
}

// Sequential little-endian reads from a legacy file, each checked against its end.
class LegacyReader {
public:
    explicit LegacyReader(const util::MappedFile& file) : file_(file) {}
    bool at_end() const { return offset_ == file_.size(); }
    int32_t i32(const std::string& what) {
        int32_t v;
        std::memcpy(&v, take(sizeof v, what), sizeof v);
        return v;
    }
    const uint8_t* take(size_t n, const std::string& what) {
        if (file_.size() - offset_ < n)
            throw Error(file_.path() + ": truncated imatrix: " + what + " needs " + std::to_string(n) + " bytes at offset " +
                        std::to_string(offset_) + ", the file has " + std::to_string(file_.size()));
        const uint8_t* p = file_.data() + offset_;
        offset_ += n;
        return p;
    }

private:
    const util::MappedFile& file_;
    size_t offset_ = 0;
};

ImportanceMatrix read_legacy(const std::string& path) {
    const util::MappedFile file(path);
    LegacyReader in(file);
    ImportanceMatrix imatrix;
    imatrix.legacy = true;
    const int32_t n_entries = in.i32("the entry count");
    if (n_entries < 1) throw Error(path + ": not an imatrix (neither GGUF nor a legacy file with entries)");
    for (int32_t i = 0; i < n_entries; ++i) {
        const std::string entry = "entry " + std::to_string(i + 1) + " of " + std::to_string(n_entries);
        const int32_t len = in.i32(entry + "'s name length");
        if (len < 1) throw Error(path + ": " + entry + " has a name of length " + std::to_string(len));
        const uint8_t* name = in.take(size_t(len), entry + "'s name");
        ImatrixEntry& e = imatrix.entries[std::string(reinterpret_cast<const char*>(name), size_t(len))];
        const int32_t ncall = in.i32(entry + "'s call count");
        const int32_t nval = in.i32(entry + "'s value count");
        if (nval < 1) throw Error(path + ": " + entry + " has " + std::to_string(nval) + " values");
        e.sums.resize(size_t(nval));
        std::memcpy(e.sums.data(), in.take(size_t(nval) * 4, entry + "'s values"), size_t(nval) * 4);
        e.counts = {ncall};
    }
    if (!in.at_end()) {  // optional: chunk count and dataset name
        imatrix.chunk_count = uint32_t(in.i32("the chunk count"));
        if (!in.at_end()) {
            const int32_t len = in.i32("the dataset name length");
            if (len > 0) {
                const uint8_t* name = in.take(size_t(len), "the dataset name");
                imatrix.datasets.emplace_back(reinterpret_cast<const char*>(name), size_t(len));
            }
        }
    }
    return imatrix;
}

ImportanceMatrix read_gguf(const std::string& path) {
    const std::unique_ptr<gguf::GgufFile> file = gguf::GgufFile::open(path);
    ImportanceMatrix imatrix;
    const std::optional<std::vector<std::string>> datasets = file->get_string_array("imatrix.datasets");
    const std::optional<uint64_t> chunk_count = file->get_uint("imatrix.chunk_count");
    const std::optional<uint64_t> chunk_size = file->get_uint("imatrix.chunk_size");
    if (!datasets || !chunk_count || !chunk_size)
        throw Error(path + ": missing imatrix metadata (imatrix.datasets, imatrix.chunk_count, imatrix.chunk_size)");
    imatrix.datasets = *datasets;
    imatrix.chunk_count = uint32_t(*chunk_count);
    imatrix.chunk_size = uint32_t(*chunk_size);

    std::map<std::string, std::pair<const gguf::TensorInfo*, const gguf::TensorInfo*>> sums_counts;
    for (const gguf::TensorInfo& t : file->tensors()) {
        std::string name = t.name;
        if (remove_suffix(name, kSumsSuffix))
            sums_counts[name].first = &t;
        else if (remove_suffix(name, kCountsSuffix))
            sums_counts[name].second = &t;
    }
    if (sums_counts.empty()) throw Error(path + ": no imatrix entries (no *.in_sum2 / *.counts tensors)");
    for (const auto& [name, pair] : sums_counts) {
        const auto [sums, counts] = pair;
        if (!sums || !counts) throw Error(path + ": " + name + " has " + (sums ? "sums but no counts" : "counts but no sums"));
        if (sums->type != tensor::Type::F32 || counts->type != tensor::Type::F32)
            throw Error(path + ": " + name + ": sums and counts must be F32");
        if (counts->n_elements < 1 || sums->n_elements % counts->n_elements != 0)
            throw Error(path + ": " + name + ": " + std::to_string(sums->n_elements) + " sums do not split into " +
                        std::to_string(counts->n_elements) + " matrices");
        ImatrixEntry& e = imatrix.entries[name];
        e.sums.resize(size_t(sums->n_elements));
        std::memcpy(e.sums.data(), sums->data, e.sums.size() * 4);
        e.counts.resize(size_t(counts->n_elements));
        for (size_t j = 0; j < e.counts.size(); ++j) {
            float c;
            std::memcpy(&c, counts->data + 4 * j, 4);
            if (!std::isfinite(c) || c < 0) throw Error(path + ": " + name + ": count " + std::to_string(c));
            e.counts[j] = std::lround(c);
        }
    }
    return imatrix;
}

}  // namespace

ImportanceMatrix read_imatrix(const std::string& path) {
    const util::MappedFile file(path);
    const bool is_gguf = file.size() >= 4 && std::memcmp(file.data(), "GGUF", 4) == 0;
    return is_gguf ? read_gguf(path) : read_legacy(path);
}

void write_imatrix(const std::string& path, const ImportanceMatrix& imatrix) {
    gguf::GgufWriter writer(path);
    writer.set_string("general.type", "imatrix");
    writer.set_string_array("imatrix.datasets", imatrix.datasets);
    writer.set_u32("imatrix.chunk_count", imatrix.chunk_count);
    writer.set_u32("imatrix.chunk_size", imatrix.chunk_size);
    std::vector<std::pair<const std::string*, std::vector<float>>> counts_of;
    for (const auto& [name, e] : imatrix.entries) {
        if (e.counts.empty() || e.sums.empty()) continue;
        const int64_t n_mat = int64_t(e.counts.size());
        writer.add_tensor(name + kSumsSuffix, tensor::Type::F32, {int64_t(e.sums.size()) / n_mat, n_mat});
        writer.add_tensor(name + kCountsSuffix, tensor::Type::F32, {1, n_mat});
        counts_of.emplace_back(&name, std::vector<float>(e.counts.begin(), e.counts.end()));
    }
    for (const auto& [name, counts] : counts_of) {
        const ImatrixEntry& e = imatrix.entries.at(*name);
        writer.write_tensor(*name + kSumsSuffix, e.sums.data(), e.sums.size() * 4);
        writer.write_tensor(*name + kCountsSuffix, counts.data(), counts.size() * 4);
    }
    writer.finish();
}

std::vector<float> importance_weights(const ImatrixEntry& entry, bool legacy) {
    std::vector<float> weights(entry.sums.size());
    if (legacy) {
        const int64_t ncall = entry.counts.empty() ? 0 : entry.counts[0];
        for (size_t i = 0; i < weights.size(); ++i) weights[i] = ncall > 0 ? entry.sums[i] / float(ncall) : entry.sums[i];
        return weights;
    }
    const size_t n_mat = entry.counts.size(), ne0 = n_mat ? entry.sums.size() / n_mat : 0;
    for (size_t m = 0; m < n_mat; ++m) {
        const float count = float(entry.counts[m]);
        for (size_t i = 0; i < ne0; ++i) weights[m * ne0 + i] = count > 0 ? entry.sums[m * ne0 + i] / count : 1.f;
    }
    return weights;
}

}  // namespace k3::convert
