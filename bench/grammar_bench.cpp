// The cost of constrained decoding per generated token: the same generation (same model, prompt
// and seed) with and without a JSON-schema grammar, timing the forward pass and the sampler
// apart, a step of each in turn. Not part of CTest; for the cost target "a constrained step adds <= 10% to an
// unconstrained one" on `k3 mock --preset bench`.
//
//   ninja -C build grammar_bench
//   build/grammar_bench MODEL.gguf [STEPS] [THREADS]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "grammar/json_schema.h"
#include "grammar/token_constraint.h"
#include "runtime/engine.h"
#include "runtime/sampler.h"
#include "runtime/session.h"
#include "server/output_constraint.h"
#include "text/tokenizer.h"

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point start) { return std::chrono::duration<double, std::milli>(Clock::now() - start).count(); }

struct Timing {
    double forward_ms = 0, sample_ms = 0;
    int steps = 0;
};

// One generation: a session, its sampler, and the time spent in each.
struct Generation {
    std::unique_ptr<k3::runtime::Session> session;
    k3::runtime::Sampler sampler;
    std::vector<float> logits;
    Timing timing;
    bool ended = false;
};

// Generates up to `steps` tokens after `prompt` for each of `params` (stopping one early at an
// end token), a step of each in turn, so that a load that comes and goes (a shared machine)
// slows them alike.
std::vector<Timing> generate_interleaved(const k3::runtime::Engine& engine, const std::vector<int32_t>& prompt,
                                         const std::vector<k3::runtime::SamplerParams>& params,
                                         const std::vector<int32_t>& end_ids, int steps) {
    std::vector<Generation> runs;
    for (const k3::runtime::SamplerParams& p : params) {
        auto session = engine.new_session();
        std::vector<float> logits = session->eval(prompt);
        runs.push_back({std::move(session), k3::runtime::Sampler(p), std::move(logits), {}, false});
    }
    for (int i = 0; i < steps; ++i) {
        for (Generation& run : runs) {
            if (run.ended) continue;
            auto start = Clock::now();
            const int32_t token = run.sampler.sample(run.logits);
            run.timing.sample_ms += ms_since(start);
            ++run.timing.steps;
            if (std::find(end_ids.begin(), end_ids.end(), token) != end_ids.end()) {
                run.ended = true;
                continue;
            }
            start = Clock::now();
            run.logits = run.session->eval(std::span(&token, 1));
            run.timing.forward_ms += ms_since(start);
        }
    }
    std::vector<Timing> timings;
    for (const Generation& run : runs) timings.push_back(run.timing);
    return timings;
}

// A mock model's vocabulary is its 256 byte tokens and fillers, far fewer texts than a trained
// BPE's: this times the mask over a stand-in of `n` word-like tokens (K3's is about 160k).
void synthetic_mask_cost(const std::shared_ptr<const k3::grammar::Grammar>& grammar, size_t n) {
    std::mt19937 rng(1);
    std::vector<std::string> tokens;
    for (int b = 0; b < 256; ++b) tokens.push_back(std::string(1, char(b)));
    const std::string letters = "etaoinshrdlcumwfgypbvkjxqz";
    while (tokens.size() < n) {
        std::string t = rng() % 2 ? " " : "";
        const size_t length = 1 + rng() % 9;
        for (size_t i = 0; i < length; ++i) t += letters[std::min<size_t>(rng() % 26, rng() % 26)];
        if (rng() % 16 == 0) t += "\":";
        tokens.push_back(std::move(t));
    }
    const auto vocabulary = std::make_shared<const k3::grammar::TokenVocabulary>(tokens, std::vector<int32_t>{0});
    std::vector<float> logits(tokens.size());
    for (const char* state : {"", "{\"name\": \"ab", "{\"name\": \"ab\", \"age\": 4"}) {
        k3::grammar::TokenConstraint constraint(grammar, vocabulary);
        for (const char* c = state; *c; ++c) {
            const auto it = std::find(tokens.begin(), tokens.end(), std::string(1, *c));
            constraint.accept(int32_t(it - tokens.begin()));
        }
        auto start = Clock::now();
        constraint.mask(logits);
        const double first = ms_since(start);
        start = Clock::now();
        const int repeats = 20;
        for (int i = 0; i < repeats; ++i) constraint.mask(logits);  // the state's mask is cached now
        std::printf("mask over %zu synthetic tokens after '%s': %.3f ms first, %.3f ms again\n", tokens.size(), state,
                    first, ms_since(start) / repeats);
    }
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s MODEL.gguf [STEPS] [THREADS]\n", argv[0]);
        return 2;
    }
    try {
        const int steps = argc > 2 ? std::atoi(argv[2]) : 64;
        k3::runtime::EngineOptions options;
        options.n_threads = argc > 3 ? std::atoi(argv[3]) : 0;
        const auto engine = k3::runtime::Engine::load(argv[1], options);
        const k3::text::Tokenizer& tokenizer = engine->tokenizer();
        const k3::server::OutputConstraint constraint(tokenizer, std::nullopt);
        auto start = Clock::now();
        const auto vocabulary = constraint.vocabulary();
        std::printf("vocabulary: %d tokens, trie built in %.1f ms\n", tokenizer.n_vocab(), ms_since(start));

        // A typical structured answer: strings (the widest masks), numbers, enums, an array.
        const nlohmann::ordered_json schema = nlohmann::ordered_json::parse(R"({"type": "object", "properties": {
            "name": {"type": "string"}, "age": {"type": "integer"}, "city": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "string"}}, "kind": {"enum": ["a", "b", "c"]}},
            "required": ["name", "age", "city", "tags", "kind"]})");
        const std::vector<int32_t> prompt = tokenizer.encode("Describe a person as JSON: ");
        k3::runtime::SamplerParams free;
        free.seed = 7;
        k3::runtime::SamplerParams constrained = free;
        constrained.grammar = k3::grammar::json_schema_grammar(schema);
        constrained.vocabulary = vocabulary;

        const std::vector<Timing> timings =
            generate_interleaved(*engine, prompt, {free, constrained}, tokenizer.end_of_generation_ids(), steps);
        const Timing& a = timings[0];
        const Timing& b = timings[1];
        auto report = [](const char* name, const Timing& t) {
            std::printf("%-12s %3d steps: forward %.3f ms/token, sampler %.3f ms/token\n", name, t.steps,
                        t.forward_ms / t.steps, t.sample_ms / t.steps);
        };
        report("free", a);
        report("json schema", b);
        const double free_step = (a.forward_ms + a.sample_ms) / a.steps;
        const double constrained_step = b.forward_ms / b.steps + b.sample_ms / b.steps;
        std::printf("a constrained step costs %+.1f%% of a free one (target <= +10%%)\n",
                    100.0 * (constrained_step - free_step) / free_step);
        synthetic_mask_cost(constrained.grammar, 160000);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "grammar_bench: %s\n", e.what());
        return 1;
    }
    return 0;
}
