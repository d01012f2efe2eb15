#include "text/answer_assembler.h"

#include "text/output_markup.h"

namespace k3::text {

AnswerAssembler::AnswerAssembler(const Tokenizer& tokenizer, AnswerOptions options)
    : tokenizer_(tokenizer),
      detokenizer_(tokenizer),
      stops_(std::move(options.stop_strings)),
      show_special_(options.show_special) {
    if (options.chat) parser_.emplace(*options.chat, options.tools);
}

OutputDelta AnswerAssembler::push(int32_t id) {
    // An end-of-generation id (delivered when the request ignores them) only ends a turn.
    if (tokenizer_.is_end_of_generation(id) && !show_special_) return {};
    if (tokenizer_.is_special(id) && !show_special_ && !(parser_ && is_markup_marker(tokenizer_.token_bytes(id))))
        return {};
    return route(stops_.push(detokenizer_.push(id)));
}

OutputDelta AnswerAssembler::finish() {
    std::string rest = stops_.push(detokenizer_.finish());
    rest += stops_.finish();
    OutputDelta delta = route(rest);
    if (parser_) {
        OutputDelta last = parser_->finish();
        record(last);
        delta.reasoning += last.reasoning;
        delta.content += last.content;
        delta.tool_calls.insert(delta.tool_calls.end(), last.tool_calls.begin(), last.tool_calls.end());
    }
    return delta;
}

OutputDelta AnswerAssembler::route(const std::string& text) {
    if (text.empty()) return {};
    text_ += text;
    OutputDelta delta;
    if (parser_) delta = parser_->push(text);
    else delta.content = text;
    record(delta);
    return delta;
}

void AnswerAssembler::record(const OutputDelta& delta) {
    parsed_.reasoning += delta.reasoning;
    parsed_.content += delta.content;
    parsed_.tool_calls.insert(parsed_.tool_calls.end(), delta.tool_calls.begin(), delta.tool_calls.end());
}

}  // namespace k3::text
