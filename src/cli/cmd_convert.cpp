// `k3 convert HF_DIR -o OUT.gguf`: a Hugging Face K3 checkpoint to GGUF (src/convert/).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>

#include "cli/commands.h"
#include "cli/options.h"
#include "convert/convert.h"
#include "util/byte_size.h"
#include "util/interruption.h"

namespace k3::cli {

int run_convert(int argc, char** argv) {
    CLI::App app{"Convert a Hugging Face Kimi-K3 checkpoint (safetensors, config.json, tiktoken.model) to GGUF."};
    show_defaults(app);
    convert::ConvertOptions options;
    std::string split_max_size;
    app.add_option("HF_DIR", options.checkpoint_dir, "checkpoint directory")->required()->check(CLI::ExistingDirectory);
    app.add_option("-o,--outfile", options.output_path, "output GGUF (NAME-0000K-of-0000N.gguf parts with --split-max-size)");
    app.add_option("--outtype", options.outtype, "type of the matrices that are not experts (MXFP4 experts stay MXFP4)")
        ->check(CLI::IsMember({"auto", "f32", "f16", "bf16", "q8_0"}));
    app.add_option("--split-max-size", split_max_size, "split the output into parts of at most SIZE bytes (e.g. 50G)")
        ->check(byte_size());
    app.add_flag("--dry-run", options.dry_run, "print the hyper-parameters and the tensor map; read no tensor data, write nothing");
    app.add_option("--chat-template", options.chat_template_path,
                   "chat template (Jinja) to store when the checkpoint has none; default: k3's bundled Kimi-K3 template")
        ->check(CLI::ExistingFile);
    OutputFlags output;
    add_output_flags(app, output);
    if (const std::optional<int> exit_code = parse_options(app, argc, argv)) return *exit_code;
    if (!options.dry_run && options.output_path.empty()) throw UsageError("-o OUT.gguf is required (or --dry-run)");
    if (!split_max_size.empty()) options.split_max_bytes = util::parse_byte_size(split_max_size);
    options.overwrite = output.force;
    if (!options.dry_run) util::stop_on_signals();  // a dry run writes nothing, so Ctrl-C just ends it
    // A dry run's plan is its output, so -q does not silence it.
    for (const std::string& path : convert::convert_checkpoint(options, stdout, output.quiet ? nullptr : stderr))
        if (!output.quiet) std::printf("wrote %s\n", path.c_str());
    return 0;
}

}  // namespace k3::cli
