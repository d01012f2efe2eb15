#include "server/cors_policy.h"

#include <algorithm>

#include "util/error.h"

namespace k3::server {

CorsPolicy::CorsPolicy(std::vector<std::string> origins) : origins_(std::move(origins)) {
    for (const std::string& origin : origins_) {
        if (origin == "*") {
            any_ = true;
            continue;
        }
        // scheme://host[:port], nothing after: a browser's Origin header never has a path.
        const size_t scheme_end = origin.find("://");
        const bool well_formed = scheme_end != std::string::npos && scheme_end > 0 &&
                                 scheme_end + 3 < origin.size() &&
                                 origin.find('/', scheme_end + 3) == std::string::npos;
        if (!well_formed)
            throw Error("--cors: '" + origin + "' is not an origin (scheme://host[:port], or * for any)");
    }
}

std::vector<std::pair<std::string, std::string>> CorsPolicy::response_headers(const std::string& origin) const {
    if (any_) return {{"Access-Control-Allow-Origin", "*"}};
    if (origin.empty() || std::find(origins_.begin(), origins_.end(), origin) == origins_.end()) return {};
    // The answer depends on the Origin header: caches must keep one per origin.
    return {{"Access-Control-Allow-Origin", origin}, {"Vary", "Origin"}};
}

std::vector<std::pair<std::string, std::string>> CorsPolicy::preflight_headers(
    const std::string& origin, const std::string& requested_headers) const {
    std::vector<std::pair<std::string, std::string>> headers = response_headers(origin);
    if (headers.empty()) return headers;
    // A wildcard would not cover Authorization, so the headers are named; clients add their own
    // (the SDKs' x-stainless-*, anthropic-version), which the key check still guards.
    headers.emplace_back("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
    headers.emplace_back("Access-Control-Allow-Headers",
                         requested_headers.empty() ? "Authorization, Content-Type, x-api-key" : requested_headers);
    headers.emplace_back("Access-Control-Max-Age", "600");
    return headers;
}

}  // namespace k3::server
