#include "text/chat_template.h"

#include <cstdio>
#include <ctime>

#include "jinja/ast.h"
#include "jinja/error.h"
#include "jinja/render.h"

namespace k3::text {

namespace {

// Runs `work`, turning the Jinja engine's errors into ChatTemplate's.
template <typename Work>
auto translating_errors(Work&& work) {
    try {
        return work();
    } catch (const jinja::BudgetExceeded& e) {
        throw TemplateBudgetExceeded(e.kind(), e.what());
    } catch (const jinja::TemplateError& e) {
        throw TemplateError(e.kind(), e.what());
    }
}

}  // namespace

ChatTemplate::ChatTemplate(const std::string& source, ChatTemplateOptions options)
    : template_(translating_errors([&] { return jinja::parse_template(source); })), options_(std::move(options)) {}

ChatTemplate::~ChatTemplate() = default;
ChatTemplate::ChatTemplate(ChatTemplate&&) noexcept = default;
ChatTemplate& ChatTemplate::operator=(ChatTemplate&&) noexcept = default;

std::string ChatTemplate::render(const nlohmann::ordered_json& variables) const {
    if (!variables.is_object()) throw k3::Error("chat template variables must be a JSON object");
    jinja::RenderOptions options;
    if (options_.now) {
        options.now = *options_.now;
    } else {
        const std::time_t t = std::time(nullptr);
        localtime_r(&t, &options.now);
    }
    options.max_output_bytes = options_.max_output_bytes;
    options.max_call_depth = options_.max_call_depth;
    options.budget = options_.budget;
    return translating_errors([&] {
        const jinja::Value vars = jinja::from_json(variables);
        jinja::Renderer renderer(options);
        return renderer.render(*template_, vars.as_dict());
    });
}

nlohmann::ordered_json chat_variables(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                                      bool add_generation_prompt, const std::string& bos_token,
                                      const std::string& eos_token, const nlohmann::ordered_json& extra) {
    nlohmann::ordered_json vars = nlohmann::ordered_json::object();
    vars["messages"] = messages;
    vars["tools"] = tools.is_array() && !tools.empty() ? tools : nlohmann::ordered_json();
    vars["documents"] = nullptr;
    vars["add_generation_prompt"] = add_generation_prompt;
    vars["bos_token"] = bos_token;
    vars["eos_token"] = eos_token;
    if (extra.is_object())
        for (const auto& [key, value] : extra.items()) vars[key] = value;
    return vars;
}

std::tm parse_instant(const std::string& text) {
    std::tm t{};
    char separator = 0;
    int consumed = 0;
    const int n = std::sscanf(text.c_str(), "%4d-%2d-%2d%c%2d:%2d:%2d%n", &t.tm_year, &t.tm_mon, &t.tm_mday,
                              &separator, &t.tm_hour, &t.tm_min, &t.tm_sec, &consumed);
    if (n != 7 || (separator != 'T' && separator != ' ') || static_cast<size_t>(consumed) != text.size() ||
        t.tm_mon < 1 || t.tm_mon > 12 || t.tm_mday < 1 || t.tm_mday > 31 || t.tm_hour > 23 || t.tm_min > 59 ||
        t.tm_sec > 60)
        throw k3::Error("invalid instant '" + text + "': expected YYYY-MM-DDTHH:MM:SS");
    t.tm_year -= 1900;
    t.tm_mon -= 1;
    std::tm normalized = t;
    timegm(&normalized);  // fills the weekday and day of the year
    return normalized;
}

}  // namespace k3::text
