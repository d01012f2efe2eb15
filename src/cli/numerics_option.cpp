#include "cli/numerics_option.h"

#include <CLI/CLI.hpp>

namespace k3::cli {

void add_numerics_option(CLI::App& app, kernels::Numerics& numerics) {
    app.add_flag_callback(
        "--exact", [&numerics] { numerics = kernels::Numerics::exact; },
        "multiply quantised weights with f32 activations (the f32act references' numerics). Default: round "
        "each activation row as llama.cpp's CPU backend does (Q8_0/Q8_1/Q8_K blocks) and use integer dots; "
        "F32/F16/BF16 weights always take f32 activations");
}

}  // namespace k3::cli
