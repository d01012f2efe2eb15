// `k3 serve`'s prompt cache (issue #13) over loopback HTTP on tiny-k3: a second conversation with
// the same system prompt reports its reused tokens in usage and /metrics and answers as the same
// request computed with cache_prompt false; /slots lists the slots and POST /slots/ID saves,
// restores and erases them inside --slot-save-path, refusing bad ids, names and files with a 4xx.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "server/server_harness.h"
#include "support/test_support.h"

namespace k3::testing {
namespace {

using nlohmann::json;

class PromptCacheServer : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir_ = new ScratchDir();
        log_ = new ScratchDir();
        server_ = new ServerProcess(fixture("tiny-k3/model.gguf"),
                                    {"--parallel", "2", "--ctx-size", "1024", "--slot-save-path", dir_->path()},
                                    log_->file("stderr.txt"));
    }
    static void TearDownTestSuite() {
        EXPECT_EQ(server_->stop(), 0);
        delete server_;
        delete dir_;
        delete log_;
    }
    static std::string server_log() { return read_text(log_->file("stderr.txt")); }
    static json post(const std::string& path, const json& body, int expected_status = 200) {
        const HttpReply reply = http_request(server_->port(), "POST", path, body.dump());
        EXPECT_EQ(reply.status, expected_status) << path << ": " << reply.body;
        return json::parse(reply.body, nullptr, false);
    }
    static json chat(const std::string& question, bool cache_prompt) {
        const std::string system(600, 'x');  // a long shared system prompt
        return post("/v1/chat/completions",
                    {{"messages", {{{"role", "system"}, {"content", "Rules: " + system}}, {{"role", "user"}, {"content", question}}}},
                     {"max_tokens", 6},
                     {"temperature", 0},
                     {"cache_prompt", cache_prompt}});
    }
    static ScratchDir *dir_, *log_;
    static ServerProcess* server_;
};
ScratchDir* PromptCacheServer::dir_ = nullptr;
ScratchDir* PromptCacheServer::log_ = nullptr;
ServerProcess* PromptCacheServer::server_ = nullptr;

TEST_F(PromptCacheServer, SharedSystemPromptIsReusedAndAnswersAsCold) {
    const json first = chat("What is one plus one?", true);
    EXPECT_EQ(first["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
    const json second = chat("Name a colour.", true);
    const int cached = second["usage"]["prompt_tokens_details"]["cached_tokens"];
    EXPECT_GT(cached, 0);
    EXPECT_LT(cached, int(second["usage"]["prompt_tokens"]));
    const json cold = chat("Name a colour.", false);
    EXPECT_EQ(cold["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
    EXPECT_EQ(second["choices"][0]["message"], cold["choices"][0]["message"]);

    const std::string metrics = http_request(server_->port(), "GET", "/metrics").body;
    EXPECT_NE(metrics.find("k3_prompt_tokens_cached_total " + std::to_string(cached)), std::string::npos) << metrics;
}

TEST_F(PromptCacheServer, SlotsListSaveRestoreEraseAndRefuseBadInput) {
    chat("Hello", true);
    const json slots = json::parse(http_request(server_->port(), "GET", "/slots").body);
    ASSERT_EQ(slots.size(), 2u);
    EXPECT_EQ(slots[0]["id"], 0);
    EXPECT_EQ(slots[0]["is_processing"], false);
    const int64_t held = slots[0]["n_prompt_tokens"];
    ASSERT_GT(held, 0);

    const json saved = post("/slots/0?action=save", {{"filename", "slot0.bin"}});
    EXPECT_EQ(saved["id_slot"], 0);
    EXPECT_EQ(saved["n_saved"], held);
    EXPECT_GT(saved["n_written"], 0);
    EXPECT_EQ(post("/slots/0?action=erase", json::object())["n_erased"], held);
    EXPECT_EQ(post("/slots/1?action=restore", {{"filename", "slot0.bin"}})["n_restored"], held);

    post("/slots/2?action=erase", json::object(), 400);
    post("/slots/-1?action=erase", json::object(), 400);
    post("/slots/x?action=erase", json::object(), 400);
    post("/slots/0?action=fly", json::object(), 400);
    post("/slots/0?action=save", {{"filename", "../outside.bin"}}, 400);
    post("/slots/0?action=save", {{"filename", "sub/inside.bin"}}, 400);
    post("/slots/0?action=save", {{"filename", 7}}, 400);
    post("/slots/0?action=restore", {{"filename", "missing.bin"}}, 404);
    write_bytes(dir_->file("junk.bin"), "not a session", 13);
    post("/slots/0?action=restore", {{"filename", "junk.bin"}}, 400);
    EXPECT_EQ(http_request(server_->port(), "GET", "/health").status, 200) << "still serving";
}

// llama-server's /completion names the reused tokens tokens_cached: an exact repeat of a 100-token
// prompt resumes at its last KDA chunk boundary before its end, 96.
TEST_F(PromptCacheServer, LlamaCompletionReportsTheCachedTokens) {
    json prompt = json::array();
    for (int i = 0; i < 100; ++i) prompt.push_back(500 + i);
    const json body = {{"prompt", prompt}, {"n_predict", 1}, {"temperature", 0}};
    EXPECT_EQ(post("/completion", body)["tokens_cached"], 0);
    EXPECT_EQ(post("/completion", body)["tokens_cached"], 96);
}

// FNV-1a 64, the session file's checksum (session_file.h's layout).
uint64_t fnv1a(const uint8_t* bytes, size_t n) {
    uint64_t hash = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; ++i) hash = (hash ^ bytes[i]) * 0x100000001b3ull;
    return hash;
}

TEST_F(PromptCacheServer, AnotherModelsOrADamagedSlotFileIsRefusedWithAWarning) {
    chat("Hello", true);
    const int64_t held = json::parse(http_request(server_->port(), "GET", "/slots").body)[0]["n_prompt_tokens"];
    ASSERT_GT(held, 0);
    post("/slots/0?action=save", {{"filename", "mine.bin"}});
    std::vector<uint8_t> bytes = read_bytes(dir_->file("mine.bin"));
    ASSERT_GT(bytes.size(), 24u);
    // Another model's state: a whole, well-formed file whose model identity (after the 8-byte
    // magic) differs, its checksum made anew.
    bytes[8] ^= 1;
    const uint64_t sum = fnv1a(bytes.data(), bytes.size() - 8);
    std::memcpy(bytes.data() + bytes.size() - 8, &sum, 8);
    write_bytes(dir_->file("foreign.bin"), bytes.data(), bytes.size());
    // A damaged one: this model's file with a byte flipped in its middle.
    std::vector<uint8_t> damaged = read_bytes(dir_->file("mine.bin"));
    damaged[damaged.size() / 2] ^= 0xff;
    write_bytes(dir_->file("damaged.bin"), damaged.data(), damaged.size());

    const json foreign = post("/slots/0?action=restore", {{"filename", "foreign.bin"}}, 400);
    EXPECT_NE(foreign["error"]["message"].get<std::string>().find("another model"), std::string::npos) << foreign;
    post("/slots/0?action=restore", {{"filename", "damaged.bin"}}, 400);
    EXPECT_EQ(json::parse(http_request(server_->port(), "GET", "/slots").body)[0]["n_prompt_tokens"], held)
        << "a refused file leaves the slot as it was";
    const std::string log = server_log();
    EXPECT_NE(log.find("warning: slot 0 restore: " + dir_->file("foreign.bin")), std::string::npos) << log;
    EXPECT_NE(log.find("warning: slot 0 restore: " + dir_->file("damaged.bin")), std::string::npos) << log;
}

}  // namespace
}  // namespace k3::testing
