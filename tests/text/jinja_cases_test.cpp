// The chat-template corpus (fixtures/chat/cases.json: 40 real templates, 2,280 renderings by
// Jinja2 3.1.6 as transformers sets it up) and the K3 prompt fixtures (chat_cases.json), each
// template parsed once and every case rendered byte for byte.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "support/test_support.h"
#include "text/chat_template.h"

namespace {

using k3::testing::fixture;
using k3::testing::read_text;
using nlohmann::ordered_json;

std::tm corpus_instant() { return k3::text::parse_instant("2026-01-15T10:30:45"); }

struct Tally {
    int passed = 0;
    int total = 0;
    int message_matches = 0;  // failing cases whose message equals Jinja2's
    int failures_expected = 0;
};

TEST(JinjaCorpus, EveryCaseRendersLikeJinja2) {
    const ordered_json corpus = ordered_json::parse(read_text(fixture("chat/cases.json")));
    std::map<std::string, std::unique_ptr<k3::text::ChatTemplate>> templates;
    std::map<std::string, std::string> parse_errors;
    std::map<std::string, Tally> tally;
    int shown = 0;
    for (const auto& c : corpus["cases"]) {
        const std::string name = c["template"].get<std::string>();
        if (!templates.count(name) && !parse_errors.count(name)) {
            try {
                k3::text::ChatTemplateOptions options;
                options.now = corpus_instant();
                templates[name] = std::make_unique<k3::text::ChatTemplate>(
                    read_text(fixture("chat/templates/" + name)), options);
            } catch (const k3::text::TemplateError& e) {
                parse_errors[name] = e.what();
            }
        }
        Tally& t = tally[name];
        ++t.total;
        std::string got, error;
        bool raised = false;
        if (parse_errors.count(name)) {
            raised = true;
            error = parse_errors[name];
        } else {
            try {
                got = templates[name]->render(c["variables"]);
            } catch (const k3::text::TemplateError& e) {
                raised = true;
                error = std::string(e.kind()) + ": " + e.what();
            }
        }
        bool ok;
        if (c.contains("error")) {
            ++t.failures_expected;
            ok = raised;
            const std::string expected = c["error"]["type"].get<std::string>() + ": " +
                                         c["error"]["message"].get<std::string>();
            if (raised && error == expected) ++t.message_matches;
            if (!ok && shown++ < 15) ADD_FAILURE() << c["id"] << ": expected " << expected << ", rendered instead";
            if (ok && error != expected && shown++ < 15)
                std::printf("note: %s raised '%s', Jinja2 '%s'\n", c["id"].get<std::string>().c_str(), error.c_str(),
                            expected.c_str());
        } else {
            ok = !raised && got == c["output"].get<std::string>();
            if (!ok && shown++ < 15) {
                if (raised) {
                    ADD_FAILURE() << c["id"] << ": raised " << error;
                } else {
                    const std::string& want = c["output"].get_ref<const std::string&>();
                    size_t at = 0;
                    while (at < got.size() && at < want.size() && got[at] == want[at]) ++at;
                    const size_t from = at > 80 ? at - 80 : 0;
                    ADD_FAILURE() << c["id"] << ": differs at byte " << at << "\n  got:  " << ordered_json(got.substr(from, 200)).dump()
                                  << "\n  want: " << ordered_json(want.substr(from, 200)).dump();
                }
            }
        }
        t.passed += ok;
    }
    int passed = 0, total = 0;
    for (const auto& [name, t] : tally) {
        std::printf("%-55s %3d/%3d  (errors: %d expected, %d same message)\n", name.c_str(), t.passed, t.total,
                    t.failures_expected, t.message_matches);
        passed += t.passed;
        total += t.total;
    }
    std::printf("total %d/%d\n", passed, total);
    EXPECT_EQ(passed, total);
    EXPECT_EQ(total, 2280);
}

TEST(JinjaCorpus, KimiK3PromptFixtures) {
    const ordered_json cases = ordered_json::parse(read_text(fixture("chat/chat_cases.json")));
    const k3::text::ChatTemplate tmpl(read_text(fixture("chat/templates/Kimi-K3.jinja")));
    int count = 0;
    for (const auto& c : cases["cases"]) {
        ordered_json vars = ordered_json::object();
        vars["messages"] = c["messages"];
        if (c.contains("tools")) vars["tools"] = c["tools"];
        for (const auto& [key, value] : c["kwargs"].items()) vars[key] = value;
        EXPECT_EQ(tmpl.render(vars), c["expected"].get<std::string>()) << c["name"];
        ++count;
    }
    EXPECT_EQ(count, 13);
}

}  // namespace
