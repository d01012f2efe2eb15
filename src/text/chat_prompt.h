// A chat rendered through its template and tokenized so that control tokens come only from the
// template's own markup. Special-token text inside the conversation (a user who types
// "<|open|>" or "<|end_of_msg|>") stays ordinary text and cannot forge conversation structure,
// as K3's official encoder ensures by tokenizing message text apart from the markers.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace k3::text {

struct ChatPrompt {
    std::string text;          // the rendered prompt
    std::vector<int32_t> ids;  // its tokens
};

// Renders `variables` (see chat_variables) and tokenizes the result: the template's markup with
// special tokens parsed, every special-token text that came from a variable as plain bytes.
// Throws TemplateError as ChatTemplate::render does.
ChatPrompt render_chat_prompt(const ChatTemplate& chat_template, const Tokenizer& tokenizer,
                              nlohmann::ordered_json variables);

// Where the first message and the messages before the last one end in `prompt`, the rendering
// of `variables` (chat_variables' object, its "messages" an array): the prompt cache keeps
// checkpoints there, so a new conversation with the same system prompt, or the last message
// edited, resumes from one. Each is the rendering of those messages without the generation
// prompt; one that is not a token prefix shorter than `prompt` gives none. Ascending.
std::vector<int64_t> message_boundaries(const ChatTemplate& chat_template, const Tokenizer& tokenizer,
                                        const nlohmann::ordered_json& variables, std::span<const int32_t> prompt);

}  // namespace k3::text
