// A grammar applied to a model's tokens: which tokens may come next (the rest get a logit of
// -inf before sampling), and the sampled token fed back. The vocabulary side (token bytes,
// their trie, the ids that end generation) is built once per vocabulary and shared.
//
//   auto vocabulary = std::make_shared<const grammar::TokenVocabulary>(bytes, end_ids);
//   grammar::TokenConstraint constraint(grammar::parse_gbnf(text), vocabulary);
//   constraint.mask(logits);  ... sample ...  constraint.accept(token);
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/matcher.h"
#include "grammar/token_trie.h"

namespace k3::grammar {

struct TokenVocabulary {
    struct Symbol {
        int32_t id;
        uint32_t code_point;  // past Unicode (grammar.h): what a grammar writes for the token
    };
    // token_bytes[id]: what the token adds to the text (empty for control tokens, which a
    // grammar never allows unless they are symbols); end_ids: the tokens that end generation,
    // allowed exactly when the text is a complete match.
    TokenVocabulary(std::vector<std::string> token_bytes, std::vector<int32_t> end_ids, std::vector<Symbol> symbols = {});

    std::vector<std::string> bytes;
    TokenTrie trie;
    std::vector<int32_t> end_ids;
    std::vector<Symbol> symbols;
};

class TokenConstraint {
public:
    TokenConstraint(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenVocabulary> vocabulary,
                    const MatcherLimits& limits = {});

    // Sets logits[id] = -inf for every token that cannot come next. Throws k3::Error if `logits`
    // is not one per vocabulary token or when no token at all can (the grammar needs a
    // character no token has).
    void mask(std::span<float> logits);
    // Advances past a sampled token; throws k3::Error for one mask() would have removed.
    void accept(int32_t token);
    bool complete() const { return matcher_.can_end(); }

private:
    bool is_end(int32_t token) const;
    const TokenVocabulary::Symbol* symbol(int32_t token) const;

    Matcher matcher_;
    std::shared_ptr<const TokenVocabulary> vocabulary_;
    std::vector<uint8_t> allowed_;
};

}  // namespace k3::grammar
