// The Jinja engine against Jinja2 itself: 223 snippets rendered by Jinja2 3.1.6 as transformers
// sets it up (data/jinja_reference.json, made by data/make_jinja_reference.py), and unit tests
// of the pieces whose expected values are Python's documented behaviour.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/test_support.h"
#include "text/chat_template.h"
#include "jinja/value.h"

namespace {

using k3::text::TemplateError;
using k3::text::ChatTemplate;
using nlohmann::ordered_json;

std::string render(const std::string& source, const ordered_json& vars = ordered_json::object()) {
    k3::text::ChatTemplateOptions options;
    options.now = k3::text::parse_instant("2026-01-15T10:30:45");
    return ChatTemplate(source, options).render(vars);
}

// The error kind a template raises ("" when it renders).
std::string error_kind(const std::string& source, const ordered_json& vars = ordered_json::object()) {
    try {
        render(source, vars);
    } catch (const TemplateError& e) {
        return e.kind();
    }
    return "";
}

TEST(JinjaReference, EverySnippetMatchesJinja2) {
    const ordered_json cases = ordered_json::parse(
        k3::testing::read_text(std::string(K3_SOURCE_DIR) + "/tests/text/data/jinja_reference.json"));
    ASSERT_GE(cases.size(), 200u);
    for (const auto& c : cases) {
        const std::string source = c["template"].get<std::string>();
        SCOPED_TRACE(source);
        if (c.contains("output")) {
            EXPECT_EQ(render(source, c["variables"]), c["output"].get<std::string>());
            continue;
        }
        try {
            const std::string got = render(source, c["variables"]);
            ADD_FAILURE() << "rendered " << ordered_json(got).dump() << " where Jinja2 raises "
                          << c["error"]["message"];
        } catch (const TemplateError& e) {
            EXPECT_EQ(e.kind(), c["error"]["type"].get<std::string>());
            // Syntax errors add " (line N)" to Jinja2's message.
            EXPECT_EQ(std::string(e.what()).rfind(c["error"]["message"].get<std::string>(), 0), 0u) << e.what();
        }
    }
}

TEST(JinjaValue, FloatsPrintLikePythonRepr) {
    using k3::jinja::format_float;
    EXPECT_EQ(format_float(0.1), "0.1");
    EXPECT_EQ(format_float(2.0), "2.0");
    EXPECT_EQ(format_float(-0.0), "-0.0");
    EXPECT_EQ(format_float(1e15), "1000000000000000.0");
    EXPECT_EQ(format_float(1e16), "1e+16");
    EXPECT_EQ(format_float(1.5e-5), "1.5e-05");
    EXPECT_EQ(format_float(0.0001), "0.0001");
    EXPECT_EQ(format_float(123456789.125), "123456789.125");
    EXPECT_EQ(format_float(1.7976931348623157e308), "1.7976931348623157e+308");
    EXPECT_EQ(format_float(5e-324), "5e-324");
}

TEST(JinjaValue, StringsReprLikePython) {
    using k3::jinja::repr_string;
    EXPECT_EQ(repr_string("abc"), "'abc'");
    EXPECT_EQ(repr_string("it's"), "\"it's\"");
    EXPECT_EQ(repr_string("both ' \""), "'both \\' \"'");
    EXPECT_EQ(repr_string("a\\b\n\t"), "'a\\\\b\\n\\t'");
    EXPECT_EQ(repr_string("\x01\x7f"), "'\\x01\\x7f'");
    EXPECT_EQ(repr_string("é中😀"), "'é中😀'");
    EXPECT_EQ(repr_string("\u00a0\u2028"), "'\\xa0\\u2028'");
}

TEST(JinjaValue, JsonDumpsLikePython) {
    using namespace k3::jinja;
    const Value v = from_json(ordered_json::parse(R"({"b": [1, 2.0, null, true], "a": "é\u0001😀"})"));
    JsonOptions plain;
    EXPECT_EQ(dumps_json(v, plain), "{\"b\": [1, 2.0, null, true], \"a\": \"é\\u0001😀\"}");
    JsonOptions ascii;
    ascii.ensure_ascii = true;
    EXPECT_EQ(dumps_json(from_json("é😀"), ascii), "\"\\u00e9\\ud83d\\ude00\"");
    JsonOptions indented;
    indented.indent = "  ";
    indented.item_separator = ",";
    indented.sort_keys = true;
    EXPECT_EQ(dumps_json(v, indented),
              "{\n  \"a\": \"é\\u0001😀\",\n  \"b\": [\n    1,\n    2.0,\n    null,\n    true\n  ]\n}");
}

TEST(JinjaTemplate, VariablesKeepKeyOrderAndNumberKinds) {
    const ordered_json vars = ordered_json::parse(R"({"x": {"z": 1, "a": 18.5, "m": 2.0}})");
    EXPECT_EQ(render("{{ x|tojson }} {{ x }}", vars), R"({"z": 1, "a": 18.5, "m": 2.0} {'z': 1, 'a': 18.5, 'm': 2.0})");
}

TEST(JinjaTemplate, TrailingNewlineDroppedOnce) {
    EXPECT_EQ(render("a\n"), "a");
    EXPECT_EQ(render("a\n\n"), "a\n");
    EXPECT_EQ(render("a\r\nb\r\n"), "a\nb");
}

TEST(JinjaTemplate, UndefinedFollowsJinja2Default) {
    EXPECT_EQ(render("[{{ nothing }}]{{ nothing is defined }}{% for x in nothing %}x{% endfor %}{{ nothing|length }}"),
              "[]False0");
    try {
        render("{{ nothing.attr }}");
        FAIL() << "attribute of undefined rendered";
    } catch (const TemplateError& e) {
        EXPECT_EQ(e.kind(), "UndefinedError");
        EXPECT_STREQ(e.what(), "'nothing' is undefined");
    }
}

TEST(JinjaTemplate, SandboxRefusesMutation) {
    const ordered_json vars = {{"xs", {1, 2}}, {"d", ordered_json::object()}};
    EXPECT_EQ(error_kind("{{ xs.append(3) }}", vars), "SecurityError");
    EXPECT_EQ(error_kind("{% set _ = d.update({'a': 1}) %}", vars), "SecurityError");
    EXPECT_EQ(render("{% set ns = namespace(n=1) %}{% set ns.n = ns.n + 1 %}{{ ns.n }}"), "2");
}

TEST(JinjaTemplate, RaiseExceptionCarriesTheTemplatesMessage) {
    try {
        render("{{ raise_exception('Only user and assistant roles are supported!') }}");
        FAIL();
    } catch (const TemplateError& e) {
        EXPECT_EQ(e.kind(), "TemplateError");
        EXPECT_STREQ(e.what(), "Only user and assistant roles are supported!");
    }
}

TEST(JinjaTemplate, UnknownFilterFailsAtParseUnlessInsideIf) {
    EXPECT_THROW(ChatTemplate("{{ x|from_json }}"), TemplateError);
    EXPECT_EQ(render("{% if false %}{{ x|from_json }}{% endif %}ok"), "ok");
    EXPECT_EQ(error_kind("{% if true %}{{ x|from_json }}{% endif %}"), "TemplateRuntimeError");
}

TEST(JinjaTemplate, StrftimeNowUsesTheGivenInstant) {
    EXPECT_EQ(render("{{ strftime_now('%d %b %Y %H:%M:%S %A') }}"), "15 Jan 2026 10:30:45 Thursday");
}

TEST(JinjaTemplate, RunawayRecursionIsAnError) {
    EXPECT_EQ(error_kind("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"), "RecursionError");
    EXPECT_EQ(error_kind("{% set ns = namespace(x=[]) %}{% for i in range(5000) %}{% set ns.x = [ns.x] %}{% endfor %}"),
              "RecursionError");
    ordered_json deep = ordered_json::array();
    for (int i = 0; i < 1100; ++i) {
        ordered_json wrapper = ordered_json::array();
        wrapper.push_back(std::move(deep));
        deep = std::move(wrapper);
    }
    EXPECT_THROW(render("{{ x }}", {{"x", deep}}), k3::Error);
}

TEST(JinjaTemplate, OutputLimitIsAnError) {
    k3::text::ChatTemplateOptions options;
    options.max_output_bytes = 1000;
    const ChatTemplate big("{% for i in range(100) %}{{ 'x' * 20 }}{% endfor %}", options);
    EXPECT_THROW(big.render(ordered_json::object()), TemplateError);
    const ChatTemplate repeated("{{ 'x' * 100000000000 }}", options);
    EXPECT_THROW(repeated.render(ordered_json::object()), TemplateError);
    EXPECT_EQ(error_kind("{{ range(1000000)|length }}"), "OverflowError");
}

TEST(JinjaTemplate, DeepNestingIsASyntaxErrorNotACrash) {
    EXPECT_THROW(ChatTemplate("{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}"), TemplateError);
    EXPECT_THROW(ChatTemplate("{{ " + std::string(5000, '[') + " }}"), TemplateError);
}

TEST(ChatVariables, AreWhatTransformersPasses) {
    const ordered_json messages = ordered_json::parse(R"([{"role": "user", "content": "hi"}])");
    const ordered_json vars = k3::text::chat_variables(messages, ordered_json::array(), true, "<s>", "</s>",
                                                       {{"enable_thinking", false}});
    EXPECT_EQ(vars.dump(),
              R"({"messages":[{"role":"user","content":"hi"}],"tools":null,"documents":null,)"
              R"("add_generation_prompt":true,"bos_token":"<s>","eos_token":"</s>","enable_thinking":false})");
}

TEST(ChatVariables, InstantParsing) {
    const std::tm t = k3::text::parse_instant("2026-01-15T10:30:45");
    EXPECT_EQ(t.tm_year, 126);
    EXPECT_EQ(t.tm_yday, 14);
    EXPECT_EQ(t.tm_wday, 4);
    EXPECT_THROW(k3::text::parse_instant("2026-01-15"), k3::Error);
}

}  // namespace
