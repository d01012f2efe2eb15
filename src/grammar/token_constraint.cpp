#include "grammar/token_constraint.h"

#include <algorithm>
#include <limits>

#include "util/error.h"

namespace k3::grammar {

TokenVocabulary::TokenVocabulary(std::vector<std::string> token_bytes, std::vector<int32_t> end_ids, std::vector<Symbol> symbols)
    : bytes(std::move(token_bytes)), trie(bytes), end_ids(std::move(end_ids)), symbols(std::move(symbols)) {
    for (int32_t id : this->end_ids)
        if (id < 0 || size_t(id) >= bytes.size()) throw Error("grammar: end-of-generation id " + std::to_string(id) + " is outside the vocabulary");
    for (const Symbol& s : this->symbols)
        if (s.id < 0 || size_t(s.id) >= bytes.size() || !bytes[size_t(s.id)].empty() || s.code_point <= kMaxUnicode ||
            s.code_point > kMaxSymbol)
            throw Error("grammar: symbol token " + std::to_string(s.id) + " must be a token without text and a code point past Unicode");
}

const TokenVocabulary::Symbol* TokenConstraint::symbol(int32_t token) const {
    for (const TokenVocabulary::Symbol& s : vocabulary_->symbols)
        if (s.id == token) return &s;
    return nullptr;
}

TokenConstraint::TokenConstraint(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenVocabulary> vocabulary,
                                 const MatcherLimits& limits)
    : matcher_(std::move(grammar), limits), vocabulary_(std::move(vocabulary)) {}

bool TokenConstraint::is_end(int32_t token) const {
    return std::ranges::find(vocabulary_->end_ids, token) != vocabulary_->end_ids.end();
}

void TokenConstraint::mask(std::span<float> logits) {
    const size_t n = vocabulary_->bytes.size();
    if (logits.size() != n)
        throw Error("grammar: " + std::to_string(logits.size()) + " logits for a vocabulary of " + std::to_string(n) + " tokens");
    if (matcher_.must_end()) {
        allowed_.assign(n, 0);  // nothing can extend the text: skip the walk
    } else {
        matcher_.allowed_tokens(vocabulary_->trie, allowed_);
    }
    for (const TokenVocabulary::Symbol& s : vocabulary_->symbols) allowed_[size_t(s.id)] = matcher_.allows_code_point(s.code_point);
    const bool can_end = matcher_.can_end();
    for (int32_t id : vocabulary_->end_ids) allowed_[size_t(id)] = can_end;
    if (std::ranges::find(allowed_, uint8_t(1)) == allowed_.end())
        throw Error("grammar: no token of the vocabulary can continue the text here");
    constexpr float kNever = -std::numeric_limits<float>::infinity();
    for (size_t id = 0; id < n; ++id)
        if (!allowed_[id]) logits[id] = kNever;
}

void TokenConstraint::accept(int32_t token) {
    if (token < 0 || size_t(token) >= vocabulary_->bytes.size())
        throw Error("grammar: token " + std::to_string(token) + " is outside the vocabulary");
    if (is_end(token)) {
        if (!matcher_.can_end()) throw Error("grammar: an end-of-generation token before the grammar is complete");
        return;
    }
    if (const TokenVocabulary::Symbol* s = symbol(token)) {
        if (!matcher_.accept_code_point(s->code_point)) throw Error("grammar: token " + std::to_string(token) + " cannot continue the text");
        return;
    }
    const std::string& bytes = vocabulary_->bytes[size_t(token)];
    if (bytes.empty() || !matcher_.accept(bytes))
        throw Error("grammar: token " + std::to_string(token) + " cannot continue the text");
}

}  // namespace k3::grammar
