// The grammar that shapes a request's output, over the model's tokens: the request's GBNF
// grammar or JSON schema (or the server's --grammar-file), and for chat the K3 answer markup
// around it, so that the constrained part is the answer's content (not its reasoning);
// tool_choice "none" is a grammar without a tools section, "required" or a named function one
// whose tools section holds one call with arguments valid for that function's parameters.
//
// In these grammars K3's markup control tokens are symbols past Unicode (grammar.h), so a
// grammar can require the <|close|> token itself, which no text can spell.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "grammar/grammar.h"
#include "grammar/token_constraint.h"
#include "server/request_parsing.h"
#include "text/tokenizer.h"

namespace k3::server {

class OutputConstraint {
public:
    // `default_grammar`: GBNF for requests that give no constraint (--grammar-file); throws
    // k3::Error if it does not parse.
    OutputConstraint(const text::Tokenizer& tokenizer, std::optional<std::string> default_grammar);

    // Null when the output is free. `chat`: the request's chat input (null for completions).
    // Throws ApiError (400) naming what is wrong with the grammar or schema.
    std::shared_ptr<const grammar::Grammar> for_request(const GenerationParams& params, const ChatInput* chat) const;
    // Built on first use (a trie over the whole vocabulary); thread-safe.
    std::shared_ptr<const grammar::TokenVocabulary> vocabulary() const;

private:
    std::shared_ptr<const grammar::Grammar> tool_call(const Json& tools) const;

    const text::Tokenizer& tokenizer_;
    std::shared_ptr<const grammar::Grammar> default_grammar_;
    mutable std::once_flag vocabulary_once_;
    mutable std::shared_ptr<const grammar::TokenVocabulary> vocabulary_;
};

}  // namespace k3::server
