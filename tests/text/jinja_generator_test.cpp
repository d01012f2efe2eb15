// map, select, reject, selectattr and rejectattr return generators as in Jinja2 3.1, where they
// are generator functions (filters.py: sync_do_map, select_or_reject). Each expected value is
// stated with the Python rule it follows; the eager-list behaviour k3 had before fails most.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>

#include "text/chat_template.h"
#include "jinja/error.h"

namespace {

using k3::text::TemplateError;
using nlohmann::ordered_json;

std::string render(const std::string& source, const ordered_json& vars = ordered_json::object()) {
    return k3::text::ChatTemplate(source).render(vars);
}

// "KIND: message" of the error a template raises, or "" when it renders.
std::string error_of(const std::string& source, const ordered_json& vars = ordered_json::object()) {
    try {
        render(source, vars);
    } catch (const TemplateError& e) {
        return e.kind() + ": " + e.what();
    }
    return "";
}

const ordered_json kUsers = ordered_json::parse(R"({"users": [{"n": "a", "on": true}, {"n": "b", "on": false}]})");

// json.dumps raises TypeError(f"Object of type {type(o).__name__} is not JSON serializable").
TEST(JinjaGenerator, TojsonOfAGeneratorIsATypeError) {
    for (const char* expression : {"[1, 2]|map('string')", "[1, 2]|select", "[1, 2]|reject", "users|selectattr('on')",
                                   "users|rejectattr('on')"})
        EXPECT_EQ(error_of(std::string("{{ ") + expression + "|tojson }}", kUsers),
                  "TypeError: Object of type generator is not JSON serializable")
            << expression;
    // Materialised first, it serialises (Jinja2's tojson of a list).
    EXPECT_EQ(render("{{ [1, 2, 3]|select('odd')|list|tojson }}"), "[1, 3]");
}

// len() of an object without __len__: TypeError("object of type 'generator' has no len()").
TEST(JinjaGenerator, LengthNeedsAList) {
    EXPECT_EQ(error_of("{{ [1, 2]|select|length }}"), "TypeError: object of type 'generator' has no len()");
    EXPECT_EQ(render("{{ users|selectattr('on')|list|length }}", kUsers), "1");
}

// A generator is an iterator: the first pass takes every item, a second pass gets none.
TEST(JinjaGenerator, IsExhaustedAfterOnePass) {
    EXPECT_EQ(render("{% set g = [1, 2, 3]|select %}{{ g|list }}|{{ g|list }}"), "[1, 2, 3]|[]");
    EXPECT_EQ(render("{% set g = users|map(attribute='n') %}{{ g|join(',') }}|{{ g|join(',') }}", kUsers), "a,b|");
}

// Objects without __bool__ or __len__ are true, even an empty generator.
TEST(JinjaGenerator, IsAlwaysTrue) {
    EXPECT_EQ(render("{% if []|select %}true{% else %}false{% endif %}"), "true");
    EXPECT_EQ(render("{% if []|select|list %}true{% else %}false{% endif %}"), "false");
}

// Iterating works everywhere an iterable is taken: for (loop.length materialises it in
// Jinja2's LoopContext), for-else, in, first (next(iter(seq))), sort, join.
TEST(JinjaGenerator, IteratesLikeAnIterable) {
    EXPECT_EQ(render("{% for x in [1, 2, 3]|select('odd') %}{{ loop.index }}{{ x }}{{ loop.length }},{% endfor %}"),
              "112,232,");
    EXPECT_EQ(render("{% for x in []|select %}{{ x }}{% else %}empty{% endfor %}"), "empty");
    EXPECT_EQ(render("{{ 2 in [1, 2]|select }}|{{ 5 in [1, 2]|select }}"), "True|False");
    EXPECT_EQ(render("{{ [1, 2]|map('string')|first }}"), "1");
    EXPECT_EQ(render("{{ [3, 1, 2]|select|sort|join(',') }}"), "1,2,3");
}

// do_last is next(iter(reversed(seq))), and reversed() refuses a generator.
TEST(JinjaGenerator, LastNeedsASequence) {
    EXPECT_EQ(error_of("{{ [1, 2]|select|last }}"), "TypeError: 'generator' object is not reversible");
    EXPECT_EQ(render("{{ [1, 2]|select|list|last }}"), "2");
}

// Printed, it is its repr: <generator object FUNCTION at 0x...>.
TEST(JinjaGenerator, PrintsAsAGeneratorObject) {
    EXPECT_EQ(render("{{ [1]|select }}").rfind("<generator object select_or_reject at 0x", 0), 0u);
    EXPECT_EQ(render("{{ [1]|map('string') }}").rfind("<generator object sync_do_map at 0x", 0), 0u);
    EXPECT_EQ(render("{{ users|rejectattr('on') }}", kUsers).rfind("<generator object select_or_reject at 0x", 0), 0u);
}

// Nothing in a generator function's body runs until it is iterated: argument errors and the
// filters it applies surface only then, and only for the items there are.
TEST(JinjaGenerator, RunsOnlyWhenIterated) {
    EXPECT_EQ(render("{% set g = [1]|map %}unused"), "unused");
    EXPECT_EQ(error_of("{{ [1]|map|list }}"), "FilterArgumentError: map requires a filter argument");
    EXPECT_EQ(render("{% set g = [1]|map('no_such_filter') %}unused"), "unused");
    EXPECT_EQ(render("{{ []|map('no_such_filter')|list }}"), "[]");
    EXPECT_NE(error_of("{{ [1]|map('no_such_filter')|list }}"), "");
}

}  // namespace
