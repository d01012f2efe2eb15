// `k3 template`: any template with JSON variables, or a model's own template with a conversation.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>

#include "support/test_support.h"

namespace {

using k3::testing::fixture;
using k3::testing::read_text;
using k3::testing::run_k3;
using k3::testing::ScratchDir;
using nlohmann::ordered_json;

void write_text(const std::string& path, const std::string& text) {
    k3::testing::write_bytes(path, text.data(), text.size());
}

TEST(TemplateCommand, RendersACorpusCaseByteForByte) {
    const ordered_json corpus = ordered_json::parse(read_text(fixture("chat/cases.json")));
    ScratchDir dir;
    int checked = 0;
    for (const auto& c : corpus["cases"]) {
        // One successful and one failing case of a template that prints the date.
        if (c["template"] != "meta-llama-Llama-3.1-8B-Instruct.jinja") continue;
        write_text(dir.file("vars.json"), c["variables"].dump());
        const auto result = run_k3({"template", "--template", fixture("chat/templates/" + c["template"].get<std::string>()),
                                    "--vars", dir.file("vars.json"), "--now", "2026-01-15T10:30:45"});
        if (c.contains("output")) {
            EXPECT_EQ(result.exit_code, 0) << result.err;
            EXPECT_EQ(result.out, c["output"].get<std::string>()) << c["id"];
        } else {
            EXPECT_EQ(result.exit_code, 1);
            EXPECT_EQ(result.out, "");
            EXPECT_NE(result.err.find(c["error"]["message"].get<std::string>()), std::string::npos) << result.err;
        }
        ++checked;
    }
    EXPECT_EQ(checked, 30);
}

TEST(TemplateCommand, RendersTheModelsTemplate) {
    const ordered_json cases = ordered_json::parse(read_text(fixture("chat/chat_cases.json")));
    const ordered_json& first = cases["cases"][0];  // system + user, add_generation_prompt only
    ASSERT_EQ(first["kwargs"], ordered_json({{"add_generation_prompt", true}}));
    ScratchDir dir;
    write_text(dir.file("messages.json"), first["messages"].dump());
    const auto result = run_k3({"template", "-m", fixture("tiny-k3/model.gguf"), "--messages", dir.file("messages.json"),
                                "--add-generation-prompt"});
    EXPECT_EQ(result.exit_code, 0) << result.err;
    EXPECT_EQ(result.out, first["expected"].get<std::string>());
}

TEST(TemplateCommand, TemplateErrorsExitOneWithTheMessage) {
    ScratchDir dir;
    write_text(dir.file("t.jinja"), "before{{ raise_exception('no tools here') }}");
    const auto result = run_k3({"template", "--template", dir.file("t.jinja")});
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_EQ(result.out, "");
    EXPECT_NE(result.err.find("no tools here"), std::string::npos) << result.err;

    write_text(dir.file("bad.jinja"), "{% if %}");
    const auto syntax = run_k3({"template", "--template", dir.file("bad.jinja")});
    EXPECT_EQ(syntax.exit_code, 1);
    EXPECT_NE(syntax.err.find("Expected an expression"), std::string::npos) << syntax.err;
}

}  // namespace

// A single message object where the conversation (an array) belongs is refused, naming the file.
TEST(TemplateCommand, MessagesOrToolsObjectInsteadOfArrayIsRefused) {
    ScratchDir dir;
    const std::string message = dir.file("message.json");
    write_text(message, R"({"role": "user", "content": "hi"})");
    auto result = run_k3({"template", "-m", fixture("tiny-k3/model.gguf"), "--messages", message});
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_EQ(result.out, "");
    EXPECT_NE(result.err.find(message + ": --messages must be a JSON array, not object (wrap a single message in [ ])"),
              std::string::npos)
        << result.err;

    write_text(dir.file("vars.json"), "{}");
    result = run_k3({"template", "--template", fixture("chat/templates/meta-llama-Llama-3.1-8B-Instruct.jinja"), "--vars",
                     dir.file("vars.json"), "--messages", message});
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_NE(result.err.find("--messages must be a JSON array"), std::string::npos) << result.err;

    write_text(dir.file("messages.json"), R"([{"role": "user", "content": "hi"}])");
    result = run_k3({"template", "-m", fixture("tiny-k3/model.gguf"), "--messages", dir.file("messages.json"), "--tools", message});
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_NE(result.err.find("--tools must be a JSON array, not object"), std::string::npos) << result.err;
}
