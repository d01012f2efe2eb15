// The work and memory a single render of a template may spend; exceeding either raises a
// TemplateRuntimeError that names the budget.
#pragma once

#include <cstdint>

namespace k3::jinja {

// Measured: the 40 templates of the fixtures' corpus (fixtures/chat, 2,280 cases) take at most
// 4,461 steps and 90,680 bytes of values in a render. One 250,000-message conversation (14 MB of
// JSON, more than --max-body's default admits) takes at most 36.6 million steps and 138 MB
// (Kimi-K3.jinja, about 5 s on a loaded machine; every other template under 19 million steps).
// The defaults leave room above that and keep a runaway template's memory well under 1 GiB.
// Containers nest at most this deep (Python's repr and json.dumps stop near 1000 too), so that
// printing, comparing and freeing a value never exhausts the stack; request parsing bounds the
// JSON it admits by the same limit (text/bounded_json.h).
inline constexpr int kMaxNesting = 1000;

struct RenderBudget {
    uint64_t max_work = 100'000'000;               // statements, expression nodes, loop iterations
    uint64_t max_value_bytes = uint64_t{768} << 20;  // strings and container slots expressions build
};

}  // namespace k3::jinja
