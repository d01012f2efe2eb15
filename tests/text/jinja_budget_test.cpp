// The Jinja engine's work and memory budgets (issue #18): real templates stay far below the
// defaults, and a runaway template is stopped by the budget it exceeds, with an error naming it.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "support/test_support.h"
#include "text/chat_template.h"
#include "jinja/render.h"

namespace {

using k3::testing::fixture;
using k3::testing::read_text;
using nlohmann::ordered_json;

// Renders through the engine directly, to read what the render spent.
k3::jinja::RenderUsage usage_of(const k3::jinja::Template& tmpl, const ordered_json& variables,
                               const k3::jinja::RenderBudget& budget = {}) {
    k3::jinja::RenderOptions options;
    options.budget = budget;
    k3::jinja::Renderer renderer(options);
    try {
        renderer.render(tmpl, k3::jinja::from_json(variables).as_dict());
    } catch (const k3::jinja::TemplateError&) {
        // Cases that raise in Jinja2 too still count what they spent.
    }
    return renderer.usage();
}

TEST(JinjaBudget, TheCorpusStaysFarBelowTheDefaults) {
    const ordered_json corpus = ordered_json::parse(read_text(fixture("chat/cases.json")));
    std::map<std::string, std::shared_ptr<const k3::jinja::Template>> templates;
    k3::jinja::RenderUsage most;
    for (const auto& c : corpus["cases"]) {
        const std::string name = c["template"].get<std::string>();
        if (!templates.count(name)) {
            try {
                templates[name] = k3::jinja::parse_template(read_text(fixture("chat/templates/" + name)));
            } catch (const k3::jinja::TemplateError&) {
                templates[name] = nullptr;  // the corpus has templates Jinja2 refuses too
            }
        }
        if (!templates[name]) continue;
        const k3::jinja::RenderUsage used = usage_of(*templates[name], c["variables"]);
        most.work = std::max(most.work, used.work);
        most.value_bytes = std::max(most.value_bytes, used.value_bytes);
    }
    std::printf("corpus maximum per render: %llu steps, %llu bytes of values\n", (unsigned long long)most.work,
                (unsigned long long)most.value_bytes);
    const k3::jinja::RenderBudget defaults;
    EXPECT_GT(most.work, 0u);
    EXPECT_LT(most.work * 1000, defaults.max_work);
    EXPECT_LT(most.value_bytes * 1000, defaults.max_value_bytes);
}

long peak_rss_kib() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_maxrss;
}

// What a render of `source` raises; fails the test if it renders.
k3::text::TemplateError render_error(const std::string& source, k3::text::ChatTemplateOptions options = {}) {
    try {
        k3::text::ChatTemplate(source, options).render(ordered_json::object());
    } catch (const k3::text::TemplateError& e) {
        return e;
    }
    ADD_FAILURE() << "rendered: " << source;
    return k3::text::TemplateError("", "");
}

// A tenth of the default budget, to keep the test short (the default takes seconds).
TEST(JinjaBudget, NestedLoopsStopAtTheWorkBudget) {
    k3::text::ChatTemplateOptions options;
    options.budget.max_work = k3::jinja::RenderBudget{}.max_work / 10;
    const k3::text::TemplateError e = render_error(
        "{% set r = range(100000) %}{% for i in r %}{% for j in r %}{% endfor %}{% endfor %}", options);
    EXPECT_EQ(e.kind(), "TemplateRuntimeError");
    EXPECT_NE(std::string(e.what()).find("work budget of 10000000 steps"), std::string::npos) << e.what();
    EXPECT_LT(peak_rss_kib(), 1L << 20) << "peak resident memory, KiB";
}

TEST(JinjaBudget, NestedRangeLoopsStopWithinABudget) {
    const k3::text::TemplateError e =
        render_error("{% for i in range(100000) %}{% for j in range(100000) %}{{ i }}{% endfor %}{% endfor %}");
    EXPECT_NE(std::string(e.what()).find(" budget of "), std::string::npos) << e.what();
    EXPECT_LT(peak_rss_kib(), 1L << 20) << "peak resident memory, KiB";
}

TEST(JinjaBudget, BuildingValuesInALoopStopsAtTheMemoryBudget) {
    // Each iteration builds a 100,000-item list: megabytes per step of work.
    const std::string tmpl =
        "{% set ns = namespace(n=0) %}{% for i in range(100000) %}{% set ns.n = ns.n + (range(100000) | list | "
        "length) %}{% endfor %}{{ ns.n }}";
    const k3::text::TemplateError e = render_error(tmpl);
    EXPECT_NE(std::string(e.what()).find("memory budget of 805306368 bytes"), std::string::npos) << e.what();
    EXPECT_LT(peak_rss_kib(), 1L << 20) << "peak resident memory, KiB";
}

TEST(JinjaBudget, ASmallerBudgetIsHonoured) {
    k3::text::ChatTemplateOptions options;
    options.budget.max_work = 1000;
    const k3::text::ChatTemplate tmpl("{% for i in range(10000) %}x{% endfor %}", options);
    EXPECT_THROW(tmpl.render(ordered_json::object()), k3::text::TemplateError);
    const k3::text::ChatTemplate small("{% for i in range(100) %}x{% endfor %}", options);
    EXPECT_EQ(small.render(ordered_json::object()), std::string(100, 'x'));
}

}  // namespace
