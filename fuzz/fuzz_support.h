// What the text-layer fuzz targets share: a check that crashes (so libFuzzer keeps the input)
// and the vocabulary they tokenize with, loaded once.
#pragma once

#include <cstdlib>

#include "gguf/gguf_file.h"
#include "text/tokenizer.h"

namespace k3::fuzz {

inline void require(bool ok) {
    if (!ok) std::abort();
}

// The tokenizer of the GGUF at `path` (the same path on every call).
inline const text::Tokenizer& fuzz_tokenizer(const char* path) {
    static const auto file = gguf::GgufFile::open(path);
    static const text::Tokenizer tok = text::Tokenizer::from_gguf(*file);
    return tok;
}

}  // namespace k3::fuzz
