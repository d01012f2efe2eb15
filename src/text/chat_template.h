// Chat templates: a model's Jinja template rendered the way Hugging Face transformers renders it
// (Jinja2 3.1 ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loop controls, the
// `generation` tag, transformers' tojson / raise_exception / strftime_now).
//
//   k3::text::ChatTemplate tmpl(source);              // parses once; throws TemplateError
//   std::string prompt = tmpl.render(variables);      // e.g. {"messages": [...], ...}
//
// A template that does not parse or that raises (raise_exception, undefined access, sandbox
// violation, type error) throws text::TemplateError with the message Jinja2 would give; nothing
// of the Jinja engine (k3::jinja) escapes.
#pragma once

#include <cstddef>
#include <ctime>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "jinja/budget.h"
#include "util/error.h"

namespace k3::jinja {
class Template;
}

namespace k3::text {

// kind(): the Python exception class Jinja2 would raise (TemplateSyntaxError, UndefinedError,
// TypeError, ...); what(): Python's str(exception), with " (line N)" for a syntax error.
class TemplateError : public Error {
public:
    TemplateError(std::string kind, const std::string& message) : Error(message), kind_(std::move(kind)) {}
    const std::string& kind() const { return kind_; }

private:
    std::string kind_;
};

// A render that ran out of its work or memory budget: a fault of the template (or of what it was
// given), which a server reports apart from a request's own errors.
class TemplateBudgetExceeded : public TemplateError {
public:
    using TemplateError::TemplateError;
};

struct ChatTemplateOptions {
    // The instant strftime_now() formats (naive local time); unset means the wall clock.
    std::optional<std::tm> now;
    // Guards against runaway templates; exceeding any raises TemplateError naming it.
    size_t max_output_bytes = size_t{256} << 20;
    int max_call_depth = 400;  // nested macro calls / recursive loops
    jinja::RenderBudget budget;  // work and memory per render
};

class ChatTemplate {
public:
    explicit ChatTemplate(const std::string& source, ChatTemplateOptions options = {});
    ~ChatTemplate();
    ChatTemplate(ChatTemplate&&) noexcept;
    ChatTemplate& operator=(ChatTemplate&&) noexcept;

    // Renders with the given top-level variables (a JSON object; key order and int/float kept).
    // A key absent is undefined in the template; a key set to null is Python's None.
    std::string render(const nlohmann::ordered_json& variables) const;

private:
    std::shared_ptr<const jinja::Template> template_;
    ChatTemplateOptions options_;
};

// The variables transformers passes to a chat template: messages, tools (null when empty),
// documents (null), add_generation_prompt, bos_token, eos_token, then every key of `extra`
// (e.g. enable_thinking), which may override the ones above.
nlohmann::ordered_json chat_variables(const nlohmann::ordered_json& messages,
                                      const nlohmann::ordered_json& tools,
                                      bool add_generation_prompt, const std::string& bos_token,
                                      const std::string& eos_token,
                                      const nlohmann::ordered_json& extra = nlohmann::ordered_json::object());

// Parses "YYYY-MM-DDTHH:MM:SS" (or with a space) into a broken-down time; throws k3::Error.
std::tm parse_instant(const std::string& text);

}  // namespace k3::text
