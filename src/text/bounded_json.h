// JSON that a chat template may see, bounded in depth: one limit shared by request parsing and
// template rendering, so that no recursive walk over a value (copying, shielding special-token
// text, converting to template values, printing) can exhaust the stack.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "jinja/budget.h"

namespace k3::text {

// Containers nest at most this deep: the Jinja engine's limit.
using jinja::kMaxNesting;

// Parses JSON text, refusing a value nested deeper than kMaxNesting while it is parsed, before
// any of it is built. Throws k3::Error naming the problem and where it is.
nlohmann::ordered_json parse_bounded_json(std::string_view text);

}  // namespace k3::text
