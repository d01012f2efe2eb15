#include "runtime/engine.h"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <type_traits>

#include "gguf/gguf_file.h"
#include "kernels/thread_pool.h"
#include "model/context.h"
#include "model/model.h"
#include "parallel/collective.h"
#include "runtime/expert_cache.h"
#include "runtime/memory_budget.h"
#include "runtime/session.h"
#include "runtime/session_file.h"
#include "runtime/session_mirror.h"
#include "runtime/session_state.h"
#include "text/tokenizer.h"
#include "util/byte_size.h"
#include "util/error.h"

namespace k3::runtime {

// engine.h names these without their headers, so its defaults are the zero values.
static_assert(model::KdaMode{} == model::KdaMode::automatic);
static_assert(kernels::Numerics{} == kernels::Numerics::native);
static_assert(std::is_same_v<DumpFn, model::DumpFn> && std::is_same_v<MatmulObserver, model::MatmulObserver>);

struct Engine::Impl {
    std::unique_ptr<model::Model> model;
    std::unique_ptr<kernels::ThreadPool> pool;
    model::ForwardOptions forward_options;
    std::unique_ptr<ExpertCache> expert_cache;  // under a budget smaller than the model
    std::string expert_stats_path;
    std::mutex forward_mutex;  // one forward pass at a time (the pool is shared)
    uint64_t identity = 0;     // model_identity(file)
    ModelInfo info;
    std::optional<text::Tokenizer> tokenizer;
    uint64_t prompt_cache_bytes = 0;
    // A led parallel job (EngineOptions::followers): rank 0 announces through `mirror`; the other
    // ranks replay through `followed`.
    std::unique_ptr<SessionMirror> mirror;
    parallel::Collective* followed = nullptr;

    void set_up_residency(const ResidencyOptions& options, int n_ranks);
};

namespace {

// Each routed expert's load from the routing statistics at `path` ([n_layer][n_expert]), for
// balancing the experts across the ranks of a parallel job; empty when there is no such file.
std::vector<double> measured_expert_loads(const std::string& path, const model::HParams& hp) {
    if (path.empty() || !std::filesystem::exists(path)) return {};
    const RoutingStats stats = RoutingStats::load(path, hp.n_layer, hp.n_expert);
    std::vector<double> loads;
    for (int64_t il = 0; il < hp.n_layer; ++il)
        for (int32_t e = 0; e < hp.n_expert; ++e) loads.push_back(stats.score(il, e));
    return loads;
}

uint64_t routed_expert_bytes(const model::Model& model) {
    uint64_t bytes = 0;
    for (const model::LayerWeights& layer : model.weights().layers)
        if (layer.moe)
            for (const kernels::MatrixView* m : {&layer.moe->gate_exps, &layer.moe->up_exps, &layer.moe->down_exps})
                bytes += uint64_t(m->rows) * m->row_stride;
    return bytes;
}

uint64_t moe_layer_count(const model::Model& model) {
    const auto& layers = model.weights().layers;
    return uint64_t(std::count_if(layers.begin(), layers.end(), [](const model::LayerWeights& layer) { return bool(layer.moe); }));
}

uint64_t model_file_bytes(const gguf::GgufFile& file) {
    uint64_t bytes = 0;
    for (const std::string& part : file.part_paths()) bytes += std::filesystem::file_size(part);
    return bytes;
}

}  // namespace

// n_ranks: the ranks of a parallel job, each of which keeps its trunk and about 1/n_ranks of the
// routed experts, so only that share has to fit.
void Engine::Impl::set_up_residency(const ResidencyOptions& options, int n_ranks) {
    std::string source = "--mem-budget";
    // budget: what copies of the weights (the resident trunk, the expert cache) may fill. room: what
    // a mapped model may, which is the whole limit: the page cache gives back what the working
    // memory takes beyond the estimate (at worst some pages are read again), never an OOM kill.
    uint64_t budget = 0, room = 0;
    if (options.mem_budget) {
        budget = room = *options.mem_budget;
    } else if (const std::optional<MemoryLimit> limit = detect_memory_limit()) {
        budget = budget_from_limit(limit->bytes);
        room = limit->bytes;
        source = limit->source;
    }
    const model::HParams& hp = model->hparams();
    // A parallel job's rank keeps its trunk (after Model::shard) and its share of the routed experts.
    const uint64_t file_bytes = n_ranks == 1 ? model_file_bytes(model->file())
                                             : model->trunk_bytes() + routed_expert_bytes(*model) / uint64_t(n_ranks);
    const uint64_t estimated_working = estimate_working_bytes(hp, n_ranks);
    constexpr uint64_t kPromptCacheDefault = uint64_t(8) << 30;  // llama-server's --cache-ram
    const uint64_t model_and_working = file_bytes + estimated_working;
    if (options.prompt_cache_bytes) {
        prompt_cache_bytes = *options.prompt_cache_bytes;
    } else if (room == 0) {
        prompt_cache_bytes = kPromptCacheDefault;
    } else if (model_and_working < room) {
        prompt_cache_bytes = std::min(kPromptCacheDefault, room - model_and_working);
    } else {  // experts stream: a 16th, from what the expert cache can spare beyond its least
        const uint64_t least = model->trunk_bytes() + estimated_working +
                               2 * ExpertCache::largest_expert_bytes(model->file(), hp);
        prompt_cache_bytes = std::min({kPromptCacheDefault, budget / 16, budget > least ? budget - least : 0});
    }
    const uint64_t working = estimated_working + prompt_cache_bytes;
    const bool fits = room == 0 || file_bytes + working <= room;
    if (fits && !options.no_mmap) {  // plain mmap, as without a budget
        // A rank reads its share in now: a pass then never waits on the disk, and the rank's
        // memory holds its share from the start, not as its tokens happen to reach the experts.
        if (n_ranks > 1) model->prefault_share();
        return;
    }

    const uint64_t largest_expert = ExpertCache::largest_expert_bytes(model->file(), hp);
    // --no-mmap on a model that fits: a cache with room for every routed expert, all read at start.
    const uint64_t cache_capacity =
        fits ? moe_layer_count(*model) * uint64_t(hp.n_expert) * largest_expert
             : split_budget(options.mem_budget ? "--mem-budget" : "memory budget (" + source + ")", budget,
                            model->trunk_bytes(), working, largest_expert)
                   .cache_capacity;
    expert_stats_path = options.expert_stats_path;
    const bool have_stats = !expert_stats_path.empty() && std::filesystem::exists(expert_stats_path);
    RoutingStats stats = have_stats ? RoutingStats::load(expert_stats_path, hp.n_layer, hp.n_expert)
                                    : RoutingStats(hp.n_layer, hp.n_expert);
    expert_cache = std::make_unique<ExpertCache>(model->file(), hp, cache_capacity, std::move(stats));
    if (fits)
        std::fprintf(stderr, "k3: --no-mmap: reading the model %s%s into memory\n", util::format_byte_size(file_bytes).c_str(),
                     n_ranks > 1 ? " (this rank's share)" : "");
    else
        std::fprintf(stderr, "k3: model %s%s + working memory %s > memory budget %s (%s): streaming experts, cache %s\n",
                     util::format_byte_size(file_bytes).c_str(), n_ranks > 1 ? " (this rank's share)" : "",
                     util::format_byte_size(working).c_str(), util::format_byte_size(budget).c_str(), source.c_str(),
                     util::format_byte_size(cache_capacity).c_str());
    model->make_trunk_resident(stderr);
    const int rank = forward_options.collective ? forward_options.collective->rank() : 0;
    const auto runs_here = [this, rank](int64_t il, int32_t expert) {
        const std::vector<int32_t>& owners = model->weights().layers[size_t(il)].moe->expert_rank;
        return owners.empty() || owners[size_t(expert)] == rank;
    };
    const ExpertWarmup warmup = fits ? ExpertWarmup::all : have_stats ? ExpertWarmup::hot : ExpertWarmup::none;
    expert_cache->warm_up(options.warmup.value_or(warmup), runs_here, stderr);
    forward_options.experts = expert_cache.get();
}

Engine::Engine() : impl_(std::make_unique<Impl>()) {}

Engine::~Engine() {
    // Unwinding from an error, rank 0 exits non-zero and mpirun ends the followers.
    if (impl_->mirror && std::uncaught_exceptions() == 0) {
        try {
            const auto announced = impl_->mirror->announce(SessionOp::shutdown, {});
        } catch (const Error& e) {
            std::fprintf(stderr, "k3: %s\n", e.what());
        }
    }
    // Every rank counts every expert's routing (ExpertSource::routed): rank 0 alone writes them.
    const bool writes_stats = !impl_->forward_options.collective || impl_->forward_options.collective->rank() == 0;
    if (!impl_->expert_cache || impl_->expert_stats_path.empty() || !writes_stats) return;
    try {
        impl_->expert_cache->routing_stats().save(impl_->expert_stats_path);
    } catch (const Error& e) {
        std::fprintf(stderr, "k3: %s\n", e.what());
    }
}

std::unique_ptr<Engine> Engine::load(const std::string& path, const EngineOptions& options) {
    std::unique_ptr<Engine> engine(new Engine());
    const auto load_here = [&] {
        engine->impl_->model = model::Model::load(path);
        const gguf::GgufFile& file = engine->impl_->model->file();
        engine->impl_->identity = model_identity(file);
        const model::HParams& hp = engine->impl_->model->hparams();
        engine->impl_->info = {path, int32_t(hp.n_vocab), hp.n_ctx_train, file.get_string("tokenizer.chat_template")};
        engine->impl_->tokenizer.emplace(text::Tokenizer::from_gguf(file));
        engine->impl_->pool = std::make_unique<kernels::ThreadPool>(options.n_threads);
        engine->impl_->forward_options.kda_mode = options.kda_mode;
        engine->impl_->forward_options.numerics = options.numerics;
        engine->impl_->forward_options.dump = options.dump;
        engine->impl_->forward_options.collective = options.collective;
        // Followers never sample: only rank 0 needs the logits.
        engine->impl_->forward_options.logits_on_root_only = options.logits_on_root_only || options.followers;
        engine->impl_->forward_options.observe = options.observe;
        if (options.collective)  // first, so that only this rank's share of the heads is made resident
            engine->impl_->model->shard(options.collective->rank(), options.collective->size(),
                                        measured_expert_loads(options.residency.expert_stats_path, hp));
        engine->impl_->set_up_residency(options.residency, options.collective ? options.collective->size() : 1);
    };
    if (!options.collective) {
        load_here();
        return engine;
    }
    // Every rank reports before any forward pass, so that one rank's failure ends them all.
    std::string load_error;
    try {
        load_here();
    } catch (const std::exception& e) {
        load_error = e.what();
    }
    parallel::agree_on_model(*options.collective, load_error, engine->impl_->identity, options.parallel_start_timeout);
    const std::vector<int32_t> expert_ranks = engine->impl_->model->expert_ranks();
    const std::string assignment(reinterpret_cast<const char*>(expert_ranks.data()),
                                 expert_ranks.size() * sizeof(int32_t));
    parallel::agree_on(*options.collective, assignment,
                       "assignment of routed experts to ranks (from --expert-stats " +
                           options.residency.expert_stats_path + ")",
                       options.parallel_start_timeout);
    if (options.followers) {
        if (options.collective->rank() == 0) engine->impl_->mirror = std::make_unique<SessionMirror>(*options.collective);
        else engine->impl_->followed = options.collective;
    }
    return engine;
}

const ModelInfo& Engine::info() const { return impl_->info; }
const text::Tokenizer& Engine::tokenizer() const { return *impl_->tokenizer; }
std::span<const gguf::TensorInfo> Engine::tensors() const { return impl_->model->file().tensors(); }
int32_t Engine::n_vocab() const { return impl_->info.n_vocab; }
int64_t Engine::n_ctx_train() const { return impl_->info.n_ctx_train; }
int Engine::n_threads() const { return impl_->pool->size(); }
uint64_t Engine::weight_bytes_per_token() const { return impl_->model->weight_bytes_per_token(); }

std::optional<ExpertCacheCounters> Engine::expert_cache_counters() const {
    if (!impl_->expert_cache) return std::nullopt;
    return impl_->expert_cache->counters();
}

std::unique_ptr<Session> Engine::new_session() const { return std::make_unique<Session>(*this); }

model::SequenceState Engine::empty_state() const { return impl_->model->new_state(); }
uint64_t Engine::identity() const { return impl_->identity; }
uint64_t Engine::prompt_cache_bytes() const { return impl_->prompt_cache_bytes; }

bool Engine::follower() const { return impl_->followed != nullptr; }

void Engine::follow() const {
    if (!impl_->followed) throw Error("follow: this engine is not a follower of a parallel job");
    // mpirun sends a Ctrl-C or SIGTERM to every rank: rank 0 shuts its command down and then ends
    // the followers with its last announcement.
    std::signal(SIGINT, SIG_IGN);
    std::signal(SIGTERM, SIG_IGN);
    try {
        follow_sessions(*this, *impl_->followed);
    } catch (const Error& e) {
        throw Error("rank " + std::to_string(impl_->followed->rank()) + ": " + e.what());
    }
}

void Engine::decode(std::span<SequenceInput> inputs) const {
    // Checked before the followers are told, so that a bad request fails on rank 0 alone.
    for (size_t i = 0; i < inputs.size(); ++i) {
        const SequenceInput& input = inputs[i];
        if (!input.session || &input.session->engine() != this)
            throw Error("decode: every input needs a session of this engine");
        for (size_t j = 0; j < i; ++j)
            if (inputs[j].session == input.session) throw Error("decode: a session appears twice in one batch");
        model::check_token_ids(input.tokens, n_vocab());
    }
    if (!impl_->mirror) return decode_here(inputs);
    SessionMirror& mirror = *impl_->mirror;
    int64_t n_captured = 0;
    for (const SequenceInput& input : inputs) n_captured += int64_t(input.capture_at.size());
    const int64_t first_snapshot = mirror.new_ids(n_captured);
    std::vector<int64_t> args{first_snapshot, int64_t(inputs.size())};
    for (const SequenceInput& input : inputs) {
        args.insert(args.end(), {input.session->mirror_id_, int64_t(input.all_logits), int64_t(input.tokens.size())});
        args.insert(args.end(), input.tokens.begin(), input.tokens.end());
        args.push_back(int64_t(input.capture_at.size()));
        args.insert(args.end(), input.capture_at.begin(), input.capture_at.end());
    }
    const auto announced = mirror.announce(SessionOp::decode, std::move(args));
    decode_here(inputs);
    int64_t id = first_snapshot;
    for (SequenceInput& input : inputs)
        for (SessionSnapshot& captured : input.captured) captured = mirror.adopt(SessionState(*captured), id++);
}

void Engine::decode_here(std::span<SequenceInput> inputs) const {
    std::vector<model::SequenceRequest> requests;
    std::vector<std::vector<model::SequenceState>> captured(inputs.size());
    const size_t V = size_t(n_vocab());
    for (size_t i = 0; i < inputs.size(); ++i) {
        SequenceInput& input = inputs[i];
        input.logits.assign(input.tokens.empty() ? 0 : (input.all_logits ? input.tokens.size() : 1) * V, 0.0f);
        requests.push_back({&input.session->state(), input.tokens, input.all_logits, input.logits.data(),
                            input.capture_at, &captured[i]});
    }
    std::lock_guard lock(impl_->forward_mutex);
    impl_->model->forward(*impl_->pool, requests, impl_->forward_options);
    for (size_t i = 0; i < inputs.size(); ++i) {
        SequenceInput& input = inputs[i];
        std::vector<int32_t>& tokens = input.session->state_->tokens;
        input.captured.clear();
        for (size_t c = 0; c < captured[i].size(); ++c) {
            std::vector<int32_t> prefix(tokens);
            prefix.insert(prefix.end(), input.tokens.begin(), input.tokens.begin() + std::ptrdiff_t(input.capture_at[c]));
            input.captured.push_back(std::make_shared<const SessionState>(SessionState{std::move(captured[i][c]), std::move(prefix)}));
        }
        tokens.insert(tokens.end(), input.tokens.begin(), input.tokens.end());
    }
}

Session::Session(const Engine& engine) : engine_(engine), state_(std::make_unique<SessionState>()) {
    reset_here();
    if (SessionMirror* mirror = engine_.impl_->mirror.get()) {
        mirror_id_ = mirror->new_ids();
        const auto announced = mirror->announce(SessionOp::create, {mirror_id_});
    }
}

Session::~Session() {
    SessionMirror* mirror = engine_.impl_->mirror.get();
    if (!mirror || std::uncaught_exceptions() != 0) return;
    try {
        const auto announced = mirror->announce(SessionOp::destroy, {mirror_id_});
    } catch (const Error& e) {
        std::fprintf(stderr, "k3: %s\n", e.what());
    }
}

std::vector<float> Session::eval(std::span<const int32_t> tokens, bool all_logits) {
    SequenceInput input{this, tokens, all_logits, {}};
    engine_.decode(std::span(&input, 1));
    return std::move(input.logits);
}

int64_t Session::position() const { return state_->sequence.position; }
const std::vector<int32_t>& Session::tokens() const { return state_->tokens; }
model::SequenceState& Session::state() { return state_->sequence; }

void Session::reset() {
    std::unique_lock<std::mutex> announced;
    if (SessionMirror* mirror = engine_.impl_->mirror.get()) announced = mirror->announce(SessionOp::reset, {mirror_id_});
    reset_here();
}

void Session::reset_here() {
    *state_ = {engine_.empty_state(), {}};
    checkpoints_.clear();
}

SessionSnapshot Session::copy_state() const { return std::make_shared<const SessionState>(*state_); }

SessionSnapshot Session::snapshot() const {
    SessionMirror* mirror = engine_.impl_->mirror.get();
    if (!mirror) return copy_state();
    const int64_t id = mirror->new_ids();
    const auto announced = mirror->announce(SessionOp::snapshot, {mirror_id_, id});
    return mirror->adopt(*state_, id);
}

void Session::restore(const SessionSnapshot& snapshot) {
    if (!snapshot || snapshot->sequence.model != state_->sequence.model)
        throw Error("restore: the snapshot is from another model");
    std::unique_lock<std::mutex> announced;
    if (SessionMirror* mirror = engine_.impl_->mirror.get()) {
        const std::optional<int64_t> id = SessionMirror::id_of(snapshot);
        // A state read from a file holds rank 0's share of the heads only.
        if (!id) throw Error("restore: in a parallel job only states the job computed can be restored, not one read from a file");
        announced = mirror->announce(SessionOp::restore, {mirror_id_, *id});
    }
    *state_ = *snapshot;
    checkpoints_.clear();
}

void Session::checkpoint() {
    if (!checkpoints_.empty() && checkpoints_.back()->sequence.position == position()) return;
    std::unique_lock<std::mutex> announced;
    if (SessionMirror* mirror = engine_.impl_->mirror.get()) announced = mirror->announce(SessionOp::checkpoint, {mirror_id_});
    checkpoints_.push_back(copy_state());
}

int64_t Session::checkpoint_at_or_before(int64_t position) const {
    for (auto it = checkpoints_.rbegin(); it != checkpoints_.rend(); ++it)
        if ((*it)->sequence.position <= position) return (*it)->sequence.position;
    return 0;
}

void Session::truncate(int64_t position) {
    if (position < 0 || position > this->position())
        throw Error("truncate: position " + std::to_string(position) + " is outside the session's " +
                    std::to_string(this->position()) + " tokens");
    if (position == this->position()) return;
    std::unique_lock<std::mutex> announced;
    if (SessionMirror* mirror = engine_.impl_->mirror.get()) announced = mirror->announce(SessionOp::truncate, {mirror_id_, position});
    std::erase_if(checkpoints_, [&](const SessionSnapshot& c) { return c->sequence.position > position; });
    const std::vector<int32_t> gap(state_->tokens.begin() + checkpoint_at_or_before(position),
                                   state_->tokens.begin() + position);
    if (checkpoints_.empty()) {
        *state_ = {engine_.empty_state(), {}};
    } else {
        *state_ = *checkpoints_.back();
    }
    if (gap.empty()) return;
    // The followers replay the gap themselves, inside their truncate.
    SequenceInput input{this, gap, false, {}};
    engine_.decode_here(std::span(&input, 1));
}

}  // namespace k3::runtime
