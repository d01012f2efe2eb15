// `k3 template`: renders a chat template, either any template file with a JSON object of
// variables (--template/--vars), or a model's tokenizer.chat_template with a conversation
// (-m/--messages), exactly as transformers' apply_chat_template would.
#include <cstdio>
#include <fstream>
#include <sstream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/options.h"
#include "gguf/gguf_file.h"
#include "text/bundled_template.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"
#include "util/error.h"

namespace k3::cli {
namespace {

using nlohmann::ordered_json;

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error("cannot read " + path);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

ordered_json read_json(const std::string& path, const char* what) {
    try {
        return ordered_json::parse(read_file(path));
    } catch (const nlohmann::json::exception& e) {
        throw Error(path + ": " + what + " is not valid JSON: " + e.what());
    }
}

// --messages and --tools hold a JSON array; an object there is a common mistake (one message).
ordered_json read_json_array(const std::string& path, const char* what) {
    ordered_json value = read_json(path, what);
    if (!value.is_array())
        throw Error(path + ": " + what + " must be a JSON array, not " + std::string(value.type_name()) +
                    (value.is_object() ? " (wrap a single message in [ ])" : ""));
    return value;
}

}  // namespace

int run_template(int argc, char** argv) {
    CLI::App app{"Render a chat template (Jinja2 as Hugging Face transformers runs it).\n"
                 "Either --template FILE --vars VARS.json, or -m MODEL.gguf --messages FILE.",
                 "k3 template"};
    show_defaults(app);
    std::string template_path, vars_path, model_path, messages_path, tools_path, now_text;
    bool add_generation_prompt = false;
    app.add_option("--template", template_path, "a Jinja template file");
    app.add_option("--vars", vars_path, "JSON object of template variables (messages, tools, bos_token, ...)");
    app.add_option("-m,--model", model_path, "a GGUF whose tokenizer.chat_template to render");
    app.add_option("--messages", messages_path, "JSON array of chat messages (with -m)");
    app.add_option("--tools", tools_path, "JSON array of tool definitions (with -m)");
    app.add_flag("--add-generation-prompt", add_generation_prompt, "end with the assistant's generation prompt (with -m)");
    app.add_option("--now", now_text, "the instant strftime_now() formats, YYYY-MM-DDTHH:MM:SS (default: now)");
    if (const std::optional<int> exit_code = parse_options(app, argc, argv)) return *exit_code;

    if (template_path.empty() == model_path.empty()) throw UsageError("give either --template or -m (not both)");
    text::ChatTemplateOptions options;
    if (!now_text.empty()) options.now = text::parse_instant(now_text);

    std::string source;
    ordered_json vars = ordered_json::object();
    if (!template_path.empty()) {
        source = read_file(template_path);
        if (!vars_path.empty()) vars = read_json(vars_path, "--vars");
        if (!vars.is_object()) throw Error(vars_path + ": --vars must be a JSON object");
        if (!messages_path.empty()) vars["messages"] = read_json_array(messages_path, "--messages");
        if (!tools_path.empty()) vars["tools"] = read_json_array(tools_path, "--tools");
        if (add_generation_prompt) vars["add_generation_prompt"] = true;
    } else {
        if (messages_path.empty()) throw UsageError("-m needs --messages FILE");
        const auto file = gguf::GgufFile::open(model_path);
        if (std::optional<std::string> embedded = file->get_string("tokenizer.chat_template")) {
            source = *embedded;
        } else {
            std::fprintf(stderr, "note: %s has no tokenizer.chat_template; using the bundled Kimi-K3 template\n",
                         model_path.c_str());
            source = std::string(text::bundled_kimi_k3_template());
        }
        const text::Tokenizer tokenizer = text::Tokenizer::from_gguf(*file);
        const text::Vocabulary& vocab = tokenizer.vocabulary();
        const std::string bos = vocab.bos_id ? std::string(tokenizer.token_bytes(*vocab.bos_id)) : "";
        const std::string eos = vocab.eos_id ? std::string(tokenizer.token_bytes(*vocab.eos_id)) : "";
        const ordered_json tools = tools_path.empty() ? ordered_json() : read_json_array(tools_path, "--tools");
        ordered_json extra = vars_path.empty() ? ordered_json::object() : read_json(vars_path, "--vars");
        if (!extra.is_object()) throw Error(vars_path + ": --vars must be a JSON object");
        vars = text::chat_variables(read_json_array(messages_path, "--messages"), tools, add_generation_prompt, bos, eos, extra);
    }

    try {
        const text::ChatTemplate tmpl(source, options);
        const std::string prompt = tmpl.render(vars);
        std::fwrite(prompt.data(), 1, prompt.size(), stdout);
        std::fflush(stdout);
    } catch (const text::TemplateError& e) {
        std::fprintf(stderr, "%s: %s\n", e.kind().c_str(), e.what());
        return 1;
    }
    return 0;
}

}  // namespace k3::cli
