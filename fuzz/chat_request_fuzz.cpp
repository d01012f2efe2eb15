// libFuzzer target: a chat request body as `k3 serve` receives it, through request parsing, the
// bundled Kimi-K3 chat template and the tokenizer (fixture vocabulary); the same body also as an
// Anthropic /v1/messages and an OpenAI /v1/responses body, through their translation into a chat
// body and then the same path. Bad input must end in a
// k3::Error (ApiError, TemplateError and BudgetExceeded included); nothing else may escape, no
// input may crash or exhaust the stack, and the prompt's tokens must decode to its text.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "gguf/gguf_file.h"
#include "server/anthropic_api.h"
#include "server/request_parsing.h"
#include "server/responses_api.h"
#include "text/bundled_template.h"
#include "text/chat_prompt.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

#include "fuzz_support.h"

namespace {

using k3::fuzz::require;

const k3::text::ChatTemplate& chat_template() {
    static const k3::text::ChatTemplate tmpl{std::string(k3::text::bundled_kimi_k3_template())};
    return tmpl;
}

// The chat path from a chat-completions body on: a refused request ends in a k3::Error.
void render_chat(const k3::server::Json& body) {
    const k3::text::Tokenizer& tok = k3::fuzz::fuzz_tokenizer(K3_FUZZ_VOCABULARY);
    const k3::server::ChatInput input = k3::server::parse_chat_input(body);
    const k3::text::ChatPrompt prompt = k3::text::render_chat_prompt(
        chat_template(), tok,
        k3::text::chat_variables(input.messages, input.tools, /*add_generation_prompt=*/true, "", "",
                                 input.template_extra));
    require(tok.decode(prompt.ids) == prompt.text);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    k3::server::Json body;
    try {
        body = k3::server::parse_body(text);
    } catch (const k3::Error&) {
        return 0;  // a refused request: what the server answers 4xx
    }
    // What the server answers 4xx/5xx is a k3::Error; anything else escapes and is a finding.
    try {
        render_chat(body);
    } catch (const k3::Error&) {
    }
    try {
        render_chat(k3::server::anthropic::chat_request(body, /*count_tokens=*/false));
    } catch (const k3::Error&) {
    }
    try {
        render_chat(k3::server::responses::chat_request(body).chat);
    } catch (const k3::Error&) {
    }
    return 0;
}
