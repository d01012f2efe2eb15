// CorsPolicy: which origins get Access-Control-Allow-Origin, what a preflight answer holds, and
// which --cors entries are refused.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "server/cors_policy.h"
#include "util/error.h"

namespace k3::server {
namespace {

using Headers = std::vector<std::pair<std::string, std::string>>;

TEST(CorsPolicy, WithoutOriginsNothingIsAdded) {
    const CorsPolicy policy;
    EXPECT_FALSE(policy.enabled());
    EXPECT_TRUE(policy.response_headers("http://a.test").empty());
    EXPECT_TRUE(policy.preflight_headers("http://a.test", "authorization").empty());
}

TEST(CorsPolicy, AListedOriginIsEchoedAndOthersGetNothing) {
    const CorsPolicy policy({"http://a.test", "https://b.test:8443"});
    EXPECT_EQ(policy.response_headers("https://b.test:8443"),
              (Headers{{"Access-Control-Allow-Origin", "https://b.test:8443"}, {"Vary", "Origin"}}));
    EXPECT_TRUE(policy.response_headers("https://b.test").empty());  // another port is another origin
    EXPECT_TRUE(policy.response_headers("").empty());
}

TEST(CorsPolicy, AStarAllowsEveryOrigin) {
    const CorsPolicy policy({"*"});
    EXPECT_EQ(policy.response_headers("http://anything.test"), (Headers{{"Access-Control-Allow-Origin", "*"}}));
    EXPECT_EQ(policy.response_headers(""), (Headers{{"Access-Control-Allow-Origin", "*"}}));
}

TEST(CorsPolicy, PreflightNamesMethodsAndHeaders) {
    const CorsPolicy policy({"http://a.test"});
    const Headers asked = policy.preflight_headers("http://a.test", "x-stainless-os, authorization");
    EXPECT_EQ(asked, (Headers{{"Access-Control-Allow-Origin", "http://a.test"},
                              {"Vary", "Origin"},
                              {"Access-Control-Allow-Methods", "GET, POST, OPTIONS"},
                              {"Access-Control-Allow-Headers", "x-stainless-os, authorization"},
                              {"Access-Control-Max-Age", "600"}}));
    const Headers unasked = policy.preflight_headers("http://a.test", "");
    EXPECT_EQ(unasked[3], (std::pair<std::string, std::string>{"Access-Control-Allow-Headers",
                                                                "Authorization, Content-Type, x-api-key"}));
    EXPECT_TRUE(policy.preflight_headers("http://c.test", "authorization").empty());
}

TEST(CorsPolicy, EntriesThatAreNotOriginsAreRefused) {
    for (const char* bad : {"a.test", "http://", "://a.test", "http://a.test/", "http://a.test/path", ""}) {
        try {
            CorsPolicy policy({bad});
            ADD_FAILURE() << "accepted '" << bad << "'";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("'" + std::string(bad) + "' is not an origin"), std::string::npos)
                << e.what();
        }
    }
}

}  // namespace
}  // namespace k3::server
