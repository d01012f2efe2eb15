// JSON that a chat template may see, bounded in depth: one limit shared by request parsing and
// template rendering, so that no recursive walk over a value (copying, shielding special-token
// text, converting to template values, printing) can exhaust the stack.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

namespace k3::text {

// Containers nest at most this deep (Python's repr and json.dumps stop near 1000 too).
inline constexpr int kMaxNesting = 1000;

// Parses JSON text, refusing a value nested deeper than kMaxNesting while it is parsed, before
// any of it is built. Throws k3::Error naming the problem and where it is.
nlohmann::ordered_json parse_bounded_json(std::string_view text);

}  // namespace k3::text
