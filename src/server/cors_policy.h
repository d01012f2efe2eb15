// Cross-origin access for browser clients (`k3 serve --cors ORIGIN`): which origins may call the
// API, the headers that tell a browser so, and the answer to a preflight (OPTIONS) request.
// With no origins configured nothing is added, so browsers keep other sites' pages out.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace k3::server {

class CorsPolicy {
public:
    // Each entry an origin ("https://app.example:8443") or "*" (any origin). Throws k3::Error for
    // an entry that is neither.
    explicit CorsPolicy(std::vector<std::string> origins = {});

    bool enabled() const { return !origins_.empty(); }
    // The headers to add to an answer to a request from `origin` (the Origin header, maybe empty).
    std::vector<std::pair<std::string, std::string>> response_headers(const std::string& origin) const;
    // Those plus what a preflight answer needs: the methods, and the request headers allowed
    // (what `requested_headers`, Access-Control-Request-Headers, asks for, or the API's own).
    std::vector<std::pair<std::string, std::string>> preflight_headers(const std::string& origin,
                                                                       const std::string& requested_headers) const;

private:
    std::vector<std::string> origins_;
    bool any_ = false;
};

}  // namespace k3::server
