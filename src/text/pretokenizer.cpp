#include "text/pretokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <string>

#include "text/utf8.h"
#include "util/error.h"

namespace k3::text {
namespace {

// The kimi-k2 reference pattern (k3-architecture.md §10) is written for tiktoken's regex engine
// (Rust fancy-regex). Its semantics, rewritten for PCRE2 10.42:
//  * `[X&&[^\p{Han}]]` (class intersection) does not exist in PCRE2, which compiles it to
//    something else without complaint: each becomes `(?:(?!\p{sc:Han})[X])`.
//  * A bare `\p{Han}` is Script_Extensions in PCRE2 but Script in Rust: use `\p{sc:Han}`
//    (otherwise CJK punctuation such as "。" would join Han runs).
//  * Rust's `\s` is exactly White_Space; PCRE2's (with UCP) also has U+180E, which left
//    White_Space in Unicode 6.3, so `\s` and `\S` are spelled out as White_Space classes.
#define K3_WHITE_SPACE "\\t\\n\\x{0B}\\f\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}"
#define K3_UPPERISH "(?:(?!\\p{sc:Han})[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}])"
#define K3_LOWERISH "(?:(?!\\p{sc:Han})[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}])"
#define K3_CONTRACTION "(?i:'s|'t|'re|'ve|'m|'ll|'d)?"

constexpr const char* kKimiK2Pattern =
    "\\p{sc:Han}+"
    "|[^\\r\\n\\p{L}\\p{N}]?" K3_UPPERISH "*" K3_LOWERISH "+" K3_CONTRACTION
    "|[^\\r\\n\\p{L}\\p{N}]?" K3_UPPERISH "+" K3_LOWERISH "*" K3_CONTRACTION
    "|\\p{N}{1,3}"
    "| ?[^" K3_WHITE_SPACE "\\p{L}\\p{N}]+[\\r\\n]*"
    "|[" K3_WHITE_SPACE "]*[\\r\\n]+"
    "|[" K3_WHITE_SPACE "]+(?![^" K3_WHITE_SPACE "])"
    "|[" K3_WHITE_SPACE "]+";

#undef K3_WHITE_SPACE
#undef K3_UPPERISH
#undef K3_LOWERISH
#undef K3_CONTRACTION

// The JIT starts on the machine stack; a word of many letters needs a backtracking frame per
// letter (the repeated groups above), so a longer stack is made on demand, doubling each time.
constexpr size_t kFirstJitStackBytes = size_t{1} << 20;

std::string pcre2_message(int code) {
    PCRE2_UCHAR buffer[256];
    pcre2_get_error_message(code, buffer, sizeof buffer);
    return reinterpret_cast<const char*>(buffer);
}

struct MatchResources {
    pcre2_match_data* match_data = nullptr;
    pcre2_match_context* context = nullptr;
    pcre2_jit_stack* jit_stack = nullptr;
    size_t jit_stack_bytes = 0;

    explicit MatchResources(const pcre2_code* code)
        : match_data(pcre2_match_data_create_from_pattern(code, nullptr)) {
        if (!match_data) throw std::bad_alloc();
    }
    ~MatchResources() {
        pcre2_jit_stack_free(jit_stack);
        pcre2_match_context_free(context);
        pcre2_match_data_free(match_data);
    }
    MatchResources(const MatchResources&) = delete;
    MatchResources& operator=(const MatchResources&) = delete;

    void grow_jit_stack() {
        jit_stack_bytes = jit_stack_bytes ? jit_stack_bytes * 2 : kFirstJitStackBytes;
        pcre2_jit_stack_free(jit_stack);
        jit_stack = pcre2_jit_stack_create(32 * 1024, jit_stack_bytes, nullptr);
        if (!context) context = pcre2_match_context_create(nullptr);
        if (!jit_stack || !context) throw std::bad_alloc();
        pcre2_jit_stack_assign(context, nullptr, jit_stack);
    }
};

}  // namespace

struct PreTokenizer::Impl {
    pcre2_code* code = nullptr;
    ~Impl() { pcre2_code_free(code); }

    // Splits a well-formed UTF-8 run like tiktoken's find_iter. The pattern matches every
    // character, so there are no gaps; one would still be passed on rather than dropped.
    void split_valid(std::string_view text, MatchResources& res,
                     const std::function<void(std::string_view)>& piece) const {
        const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
        size_t at = 0;
        while (at < text.size()) {
            // The input was validated once; re-checking it on every call would be quadratic.
            const int rc = pcre2_match(code, subject, text.size(), at, PCRE2_NO_UTF_CHECK,
                                       res.match_data, res.context);
            if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
                res.grow_jit_stack();
                continue;
            }
            if (rc == PCRE2_ERROR_NOMATCH) {
                piece(text.substr(at));
                return;
            }
            if (rc < 0) throw Error("pre-tokenizer: PCRE2 match failed: " + pcre2_message(rc));
            const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(res.match_data);
            size_t start = ovector[0], end = ovector[1];
            if (start > at) piece(text.substr(at, start - at));
            if (end == start) end += utf8_sequence_length(text.substr(start));  // never: no empty alternative
            piece(text.substr(start, end - start));
            at = end;
        }
    }
};

PreTokenizer::PreTokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PreTokenizer::~PreTokenizer() = default;

std::unique_ptr<PreTokenizer> PreTokenizer::create(std::string_view name) {
    if (name != "kimi-k2")
        throw Error("tokenizer.ggml.pre '" + std::string(name) +
                    "' is not supported (supported pre-tokenizers: kimi-k2)");
    auto impl = std::make_unique<Impl>();
    int error = 0;
    PCRE2_SIZE error_offset = 0;
    impl->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(kKimiK2Pattern), PCRE2_ZERO_TERMINATED,
                               PCRE2_UTF | PCRE2_UCP, &error, &error_offset, nullptr);
    if (!impl->code)
        throw Error("pre-tokenizer kimi-k2: PCRE2 rejects the pattern at offset " +
                    std::to_string(error_offset) + ": " + pcre2_message(error));
    // Without JIT support PCRE2 interprets the pattern: slower, same result.
    pcre2_jit_compile(impl->code, PCRE2_JIT_COMPLETE);
    return std::unique_ptr<PreTokenizer>(new PreTokenizer(std::move(impl)));
}

void PreTokenizer::split(std::string_view text, const std::function<void(std::string_view)>& piece) const {
    MatchResources resources(impl_->code);
    while (!text.empty()) {
        const size_t valid = utf8_valid_prefix_length(text);
        impl_->split_valid(text.substr(0, valid), resources, piece);
        if (valid == text.size()) return;
        piece(text.substr(valid, 1));  // an ill-formed byte stands alone
        text.remove_prefix(valid + 1);
    }
}

}  // namespace k3::text
