// `k3 mock -o OUT.gguf`: a random-initialised K3-shaped model (src/model/mock_model.h) with a
// byte-level vocabulary and the bundled chat template, streamed through the GGUF writer one
// tensor at a time.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "cli/commands.h"
#include "cli/options.h"
#include "gguf/gguf_writer.h"
#include "model/mock_model.h"
#include "text/bundled_template.h"
#include "text/vocabulary.h"
#include "util/byte_size.h"
#include "util/error.h"
#include "util/interruption.h"
#include "util/progress.h"

namespace k3::cli {
namespace {

// K3's special slots, relative to the first of the 256 ids after the BPE ranks (spec §10).
struct SpecialSlot {
    int offset;
    const char* text;
};
constexpr SpecialSlot kSpecialSlots[] = {
    {0, "[BOS]"}, {1, "[EOS]"}, {2, "<|end_of_msg|>"}, {3, "<|open|>"}, {4, "<|close|>"}, {5, "<|sep|>"},
    {6, "[start_header_id]"}, {7, "[end_header_id]"}, {9, "[EOT]"}, {18, "<|media_begin|>"}, {19, "<|media_content|>"},
    {20, "<|media_end|>"}, {21, "<|media_pad|>"}, {65, "<osagent_mode>"}, {254, "[UNK]"}, {255, "[PAD]"},
};
constexpr int32_t kNormal = 1, kControl = 3, kUnused = 5;  // tokenizer.ggml.token_type values

// 256 byte tokens (GPT-2 bytes_to_unicode images), UNUSED fillers, then 256 CONTROL slots.
void write_vocabulary(gguf::GgufWriter& w, int64_t n_vocab) {
    const int64_t first_special = n_vocab - 256;
    std::vector<std::string> tokens(static_cast<size_t>(n_vocab));
    std::vector<int32_t> types(static_cast<size_t>(n_vocab), kUnused);
    for (int b = 0; b < 256; ++b) {
        tokens[size_t(b)] = text::gpt2_bytes_to_text(std::string(1, char(b)));
        types[size_t(b)] = kNormal;
    }
    for (int64_t id = 256; id < first_special; ++id) tokens[size_t(id)] = "[PAD" + std::to_string(id) + "]";
    for (int64_t id = first_special; id < n_vocab; ++id) {
        tokens[size_t(id)] = "<|reserved_token_" + std::to_string(id) + "|>";
        types[size_t(id)] = kControl;
    }
    for (const SpecialSlot& s : kSpecialSlots) tokens[size_t(first_special + s.offset)] = s.text;
    w.set_string("tokenizer.ggml.model", "gpt2");
    w.set_string("tokenizer.ggml.pre", "kimi-k2");
    w.set_string_array("tokenizer.ggml.tokens", tokens);
    w.set_i32_array("tokenizer.ggml.token_type", types);
    w.set_string_array("tokenizer.ggml.merges", {});
    w.set_u32("tokenizer.ggml.bos_token_id", uint32_t(first_special));
    w.set_u32("tokenizer.ggml.eos_token_id", uint32_t(first_special + 2));  // <|end_of_msg|>
    w.set_u32("tokenizer.ggml.padding_token_id", uint32_t(first_special + 255));
    w.set_bool("tokenizer.ggml.add_bos_token", false);
    w.set_bool("tokenizer.ggml.add_eos_token", false);
    w.set_string("tokenizer.chat_template", std::string(text::bundled_kimi_k3_template()));
}

tensor::Type producible_type(const std::string& name, const char* option) {
    const tensor::TypeTraits* t = tensor::find_type(name);
    if (!t) throw UsageError(std::string(option) + ": unknown type '" + name + "'");
    if (!t->quantize_row) throw UsageError(std::string(option) + ": k3 cannot produce type " + std::string(t->name));
    return t->type;
}

// Fills one tensor's bytes, rows split over threads; every row depends on (seed, index, row) only.
void produce(const model::MockTensor& t, uint64_t seed, size_t index, unsigned n_threads, std::vector<uint8_t>& bytes) {
    const tensor::TypeTraits& traits = tensor::traits(t.type);
    const size_t row_bytes = tensor::row_bytes(traits, t.ne[0]);
    const int64_t rows = t.rows();
    bytes.resize(t.bytes());
    auto work = [&](int64_t first) {
        std::vector<float> row(static_cast<size_t>(t.ne[0]));  // [ne0]
        for (int64_t r = first; r < rows; r += n_threads) {
            model::mock_row(t, seed, index, r, row.data());
            traits.quantize_row(row.data(), bytes.data() + size_t(r) * row_bytes, t.ne[0]);
        }
    };
    const unsigned used = unsigned(std::min<int64_t>(n_threads, rows));
    std::vector<std::thread> threads;
    for (unsigned i = 1; i < used; ++i) threads.emplace_back(work, int64_t(i));
    work(0);
    for (std::thread& th : threads) th.join();
}

}  // namespace

int run_mock(int argc, char** argv) {
    // The preset sets every default first; the shape options given override it.
    std::string preset = "tiny";
    for (int i = 1; i + 1 < argc; ++i)
        if (std::strcmp(argv[i], "--preset") == 0) preset = argv[i + 1];
    for (int i = 1; i < argc; ++i)
        if (std::strncmp(argv[i], "--preset=", 9) == 0) preset = argv[i] + 9;
    model::MockShape s = model::mock_preset(preset);
    const bool bench = preset == "bench";
    std::string weight_type = bench ? "q8_0" : "f32", expert_type, embd_type, output_type, split_size, output, name;
    uint64_t seed = 1;
    unsigned n_threads = std::max(1u, std::thread::hardware_concurrency());
    bool dry_run = false;
    OutputFlags output_flags;

    CLI::App app{"Write a random-initialised Kimi-K3-shaped GGUF (for tests and benchmarks)."};
    show_defaults(app);
    app.add_option("-o,--output", output, "output GGUF path");
    app.add_option("--preset", preset, "tiny (like fixtures/tiny-k3) or bench (n_embd 2048, 16 layers, ~3 GB)");
    app.add_option("--seed", seed, "random seed")->capture_default_str();
    app.add_option("--name", name, "general.name (default: mock-PRESET)");
    app.add_option("--embd", s.n_embd, "embedding_length")->capture_default_str();
    app.add_option("--layers", s.n_layer, "block_count")->capture_default_str();
    app.add_option("--mla-every", s.mla_every, "MLA when (layer+1) % N == 0, and the last layer")->capture_default_str();
    app.add_option("--heads", s.n_head, "attention.head_count (KDA and MLA)")->capture_default_str();
    app.add_option("--kda-head-dim", s.kda_head_dim, "kda.head_dim")->capture_default_str();
    app.add_option("--conv-kernel", s.conv_kernel, "ssm.conv_kernel")->capture_default_str();
    app.add_option("--q-lora-rank", s.q_lora_rank, "attention.q_lora_rank (0: plain attn_q)")->capture_default_str();
    app.add_option("--kv-lora-rank", s.kv_lora_rank, "attention.kv_lora_rank")->capture_default_str();
    app.add_option("--qk-nope", s.qk_nope_dim, "MLA no-position key dims per head")->capture_default_str();
    app.add_option("--qk-rope", s.qk_rope_dim, "MLA \"rope\" key dims (rope.dimension_count)")->capture_default_str();
    app.add_option("--v-head-dim", s.v_head_dim, "attention.value_length_mla")->capture_default_str();
    app.add_option("--ff", s.n_ff, "feed_forward_length (dense layers)")->capture_default_str();
    app.add_option("--dense-layers", s.n_dense_lead, "leading_dense_block_count")->capture_default_str();
    app.add_option("--experts", s.n_expert, "expert_count")->capture_default_str();
    app.add_option("--experts-used", s.n_expert_used, "expert_used_count")->capture_default_str();
    app.add_option("--expert-ff", s.expert_ff, "expert_feed_forward_length")->capture_default_str();
    app.add_option("--latent", s.expert_latent, "expert_latent_length (0: no latent projection)")->capture_default_str();
    app.add_option("--shared-experts", s.n_shared, "expert_shared_count")->capture_default_str();
    app.add_option("--attn-res-block", s.attn_res_block_size, "attn_res.block_size (0: plain residual)")->capture_default_str();
    app.add_option("--vocab", s.n_vocab, "vocab_size (>= 512)")->capture_default_str();
    app.add_option("--ctx", s.context_length, "context_length")->capture_default_str();
    app.add_option("--rms-eps", s.rms_eps, "attention.layer_norm_rms_epsilon")->capture_default_str();
    app.add_option("--gate-lower-bound", s.gate_lower_bound, "kda.gate_lower_bound")->capture_default_str();
    app.add_option("--situ-beta", s.situ_beta, "activation.situ_beta")->capture_default_str();
    app.add_option("--situ-linear-beta", s.situ_linear_beta, "activation.situ_linear_beta")->capture_default_str();
    app.add_option("--expert-weights-scale", s.expert_weights_scale, "expert_weights_scale")->capture_default_str();
    app.add_option("--routing-skew", s.routing_skew,
                   "expert popularity: 0 uniform; S > 0 biases exp_probs_b so the r-th most popular expert is chosen ~ r^-S as often")
        ->capture_default_str();
    app.add_option("--type", weight_type, "type of the 2-D/3-D weights (f32, f16, bf16, q8_0, mxfp4, ...)")->capture_default_str();
    app.add_option("--expert-type", expert_type, "type of the routed experts (default: bench mxfp4, else --type)");
    app.add_option("--embd-type", embd_type, "type of token_embd (default: --type)");
    app.add_option("--output-type", output_type, "type of output.weight (default: --type)");
    app.add_option("--split-max-size", split_size, "split into parts of at most this size (e.g. 1G)")->check(byte_size());
    app.add_option("-t,--threads", n_threads, "threads generating tensors (0: all hardware threads)")->check(thread_count());
    app.add_flag("--dry-run", dry_run, "print the layout and size, write nothing");
    add_output_flags(app, output_flags);
    if (const std::optional<int> exit_code = parse_options(app, argc, argv)) return *exit_code;
    if (output.empty() && !dry_run) throw UsageError("an output path is required (-o OUT.gguf), or --dry-run");
    if (n_threads == 0) n_threads = std::max(1u, std::thread::hardware_concurrency());

    model::MockTypes types;
    types.weights = producible_type(weight_type, "--type");
    types.experts = producible_type(expert_type.empty() ? (bench ? "mxfp4" : weight_type) : expert_type, "--expert-type");
    types.embeddings = producible_type(embd_type.empty() ? weight_type : embd_type, "--embd-type");
    types.output = producible_type(output_type.empty() ? weight_type : output_type, "--output-type");
    const std::vector<model::MockTensor> tensors = model::mock_tensors(s, types);

    uint64_t total_bytes = 0, parameters = 0;
    size_t fallbacks = 0, n_mla = 0;
    for (const model::MockTensor& t : tensors) {
        total_bytes += t.bytes();
        parameters += uint64_t(t.rows() * t.ne[0]);
        fallbacks += t.fell_back_to_f32;
    }
    for (int64_t il = 0; il < s.n_layer; ++il) n_mla += s.is_mla(il);
    std::FILE* report = output_flags.quiet ? nullptr : stderr;
    if (report)
        std::fprintf(report, "k3 mock: preset %s, %lld layers (%zu MLA), %zu tensors, %llu parameters, %s of tensor data\n",
                 preset.c_str(), static_cast<long long>(s.n_layer), n_mla, tensors.size(),
                 static_cast<unsigned long long>(parameters), util::format_byte_size(total_bytes).c_str());
    if (fallbacks && report)
        std::fprintf(report, "k3 mock: %zu tensors stored as f32: their rows are not whole blocks of the requested type\n", fallbacks);
    if (dry_run) {
        std::printf("{\"tensors\": %zu, \"parameters\": %llu, \"tensor_bytes\": %llu}\n", tensors.size(),
                    static_cast<unsigned long long>(parameters), static_cast<unsigned long long>(total_bytes));
        return 0;
    }

    gguf::WriterOptions options;
    if (!split_size.empty()) options.split_max_bytes = util::parse_byte_size(split_size);
    options.overwrite = output_flags.force;
    util::stop_on_signals();
    gguf::GgufWriter writer(output, options);
    model::write_mock_hparams(writer, s, name.empty() ? "mock-" + preset : name);
    write_vocabulary(writer, s.n_vocab);
    for (const model::MockTensor& t : tensors) writer.add_tensor(t.name, t.type, t.ne);

    std::vector<uint8_t> bytes;
    util::Progress bar(report, total_bytes, tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) {
        const model::MockTensor& t = tensors[i];
        produce(t, seed, i, n_threads, bytes);
        writer.write_tensor(t.name, bytes.data(), bytes.size());
        bar.advance(bytes.size(), t.name);
    }
    const std::vector<std::string> paths = writer.finish();
    bar.finish();
    if (report)
        for (const std::string& p : paths) std::printf("%s\n", p.c_str());
    return 0;
}

}  // namespace k3::cli
