// --exact, registered the same way on run, chat, serve, eval and bench (issue #12).
#pragma once

#include "kernels/matmul.h"

namespace CLI { class App; }

namespace k3::cli {

void add_numerics_option(CLI::App& app, kernels::Numerics& numerics);

}  // namespace k3::cli
