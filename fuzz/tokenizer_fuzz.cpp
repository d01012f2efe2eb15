// libFuzzer target: the tokenizer on arbitrary bytes, with the fixture vocabulary. Decoding the
// ids must give the input back, with and without special-token parsing, and the streaming
// detokenizer must put out the same text when the input is well-formed UTF-8.
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "gguf/gguf_file.h"
#include "text/tokenizer.h"
#include "text/utf8.h"

#include "fuzz_support.h"

using k3::fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    const k3::text::Tokenizer& tok = k3::fuzz::fuzz_tokenizer(K3_FUZZ_VOCABULARY);
    for (bool parse_special : {false, true}) {
        const auto ids = tok.encode(text, parse_special);
        require(tok.decode(ids) == text);
        if (k3::text::utf8_valid_prefix_length(text) != text.size()) continue;
        k3::text::StreamingDetokenizer detok(tok);
        std::string streamed;
        for (int32_t id : ids) streamed += detok.push(id);
        streamed += detok.finish();
        require(streamed == text);
    }
    return 0;
}
