// Pre-tokenization: the regex split of text into pieces that BPE then encodes one by one.
#pragma once

#include <functional>
#include <memory>
#include <string_view>

namespace k3::text {

class PreTokenizer {
public:
    // The pre-tokenizer a GGUF names in tokenizer.ggml.pre. Only "kimi-k2" is implemented;
    // any other name throws k3::Error saying it is unsupported.
    static std::unique_ptr<PreTokenizer> create(std::string_view name);
    ~PreTokenizer();
    PreTokenizer(const PreTokenizer&) = delete;
    PreTokenizer& operator=(const PreTokenizer&) = delete;

    // Calls `piece` for each piece of `text`, in order; the pieces concatenate to `text`.
    // Bytes that are not well-formed UTF-8 become pieces of one byte each, so no input byte is
    // lost. Thread-safe.
    void split(std::string_view text, const std::function<void(std::string_view)>& piece) const;

private:
    struct Impl;
    explicit PreTokenizer(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace k3::text
