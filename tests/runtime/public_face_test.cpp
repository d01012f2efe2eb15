// The runtime's public face (engine.h, session.h) includes nothing of the layers below it
// (model, kernels, tensor, gguf), so a front end that includes it depends on none of them.
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "support/test_support.h"

namespace k3::runtime {
namespace {

TEST(PublicFace, IncludesNoHeaderOfTheLayersBelow) {
    const std::regex below(R"(#include\s+"(model|kernels|tensor|gguf)/)");
    for (const char* header : {"engine.h", "session.h", "expert_residency.h"}) {
        const std::string text = testing::read_text(std::string(K3_SOURCE_DIR) + "/src/runtime/" + header);
        ASSERT_FALSE(text.empty()) << header;
        std::smatch m;
        EXPECT_FALSE(std::regex_search(text, m, below)) << header << " includes " << m.str();
    }
}

}  // namespace
}  // namespace k3::runtime
