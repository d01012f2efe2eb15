#include <cstdio>
#include <string>

#include "parallel/collective.h"
#include "util/error.h"

namespace k3::parallel {

namespace {

// One rank's report: the identity as 16 hex digits, then the load error (empty when it loaded).
std::string encode_report(const std::string& load_error, uint64_t identity) {
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(identity));
    return hex + load_error;
}

}  // namespace

void agree_on_model(Collective& collective, const std::string& load_error, uint64_t model_identity,
                    std::chrono::milliseconds timeout) {
    const std::vector<std::string> reports =
        collective.allgather_bytes(encode_report(load_error, model_identity), timeout);
    std::string failures;
    for (size_t r = 0; r < reports.size(); ++r)
        if (reports[r].size() > 16)
            failures += (failures.empty() ? "" : "; ") + ("rank " + std::to_string(r) + ": " + reports[r].substr(16));
    if (!failures.empty()) throw Error("parallel job: " + failures);
    for (size_t r = 1; r < reports.size(); ++r)
        if (reports[r] != reports[0])
            throw Error("parallel job: rank " + std::to_string(r) + " loaded a different model file than rank 0 " +
                        "(metadata hash " + reports[r] + " vs " + reports[0] + "); every rank needs the same GGUF");
}

void agree_on(Collective& collective, const std::string& value, const std::string& what,
              std::chrono::milliseconds timeout) {
    const std::vector<std::string> reports = collective.allgather_bytes(value, timeout);
    std::string differing;
    for (size_t r = 1; r < reports.size(); ++r)
        if (reports[r] != reports[0]) differing += (differing.empty() ? "rank " : ", rank ") + std::to_string(r);
    if (!differing.empty()) throw Error("parallel job: " + differing + ": " + what + " differs from rank 0's");
}

}  // namespace k3::parallel
