// `k3 quantize IN.gguf OUT.gguf TYPE`: re-encodes a GGUF's tensors (src/convert/quantize.h).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/options.h"
#include "convert/quantize.h"
#include "util/byte_size.h"
#include "util/error.h"
#include "util/interruption.h"

namespace k3::cli {

int run_quantize(int argc, char** argv) {
    CLI::App app{"Re-encode a GGUF model's tensors. 1-D tensors, norms, the router and the conv weights keep their type "
                 "unless a --tensor-type rule names them; quantized tensors are kept unless --requantize."};
    show_defaults(app);
    convert::QuantizeOptions options;
    std::vector<std::string> rules;
    std::string split_max_size;
    app.add_option("IN", options.input_path, "input GGUF (the first part of a split model opens all parts)")->required();
    app.add_option("OUT", options.output_path, "output GGUF")->required();
    app.add_option("TYPE", options.type, "target type: f32, f16, bf16, q8_0, mxfp4, any type k3 can encode, or a llama-quantize mixture (Q2_K, Q3_K_M, Q4_K_M, Q5_K_M, Q6_K, IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ2_M, IQ3_XXS, IQ3_XS, IQ3_S, IQ3_M, TQ1_0, TQ2_0)")->required();
    app.add_option("--tensor-type", rules, "REGEX=TYPE: tensors whose name matches REGEX get TYPE (repeatable, first match wins)");
    app.add_flag("--requantize", options.requantize, "re-encode already-quantized tensors (through f32)");
    app.add_option("--imatrix", options.imatrix_path,
                   "importance matrix (k3 imatrix / llama-imatrix, GGUF or legacy .dat); needed for IQ1_S, IQ1_M, IQ2_*, IQ3_XXS")
        ->check(CLI::ExistingFile);
    app.add_option("-t,--threads", options.n_threads, "encoding threads (0: all hardware threads)")->check(thread_count());
    app.add_option("--split-max-size", split_max_size, "split the output into parts of at most SIZE bytes (e.g. 50G)")
        ->check(byte_size());
    OutputFlags output;
    add_output_flags(app, output);
    if (const std::optional<int> exit_code = parse_options(app, argc, argv)) return *exit_code;
    for (const std::string& rule : rules) {
        const size_t equals = rule.rfind('=');
        if (equals == std::string::npos || equals == 0 || equals + 1 == rule.size())
            throw UsageError("--tensor-type " + rule + ": expected REGEX=TYPE");
        options.tensor_types.emplace_back(rule.substr(0, equals), rule.substr(equals + 1));
    }
    if (!split_max_size.empty()) options.split_max_bytes = util::parse_byte_size(split_max_size);
    options.overwrite = output.force;
    util::stop_on_signals();
    std::FILE* report = output.quiet ? nullptr : stderr;
    for (const std::string& path : convert::quantize_model(options, report, report))
        if (!output.quiet) std::printf("wrote %s\n", path.c_str());
    return 0;
}

}  // namespace k3::cli
