#include "runtime/engine.h"

#include <mutex>

#include "gguf/gguf_file.h"
#include "kernels/thread_pool.h"
#include "model/model.h"
#include "runtime/session.h"
#include "util/error.h"

namespace k3::runtime {

struct Engine::Impl {
    std::unique_ptr<model::Model> model;
    std::unique_ptr<kernels::ThreadPool> pool;
    model::ForwardOptions forward_options;
    std::mutex forward_mutex;  // one forward pass at a time (the pool is shared)
};

Engine::Engine() : impl_(std::make_unique<Impl>()) {}
Engine::~Engine() = default;

std::unique_ptr<Engine> Engine::load(const std::string& path, const EngineOptions& options) {
    std::unique_ptr<Engine> engine(new Engine());
    engine->impl_->model = model::Model::load(path);
    engine->impl_->pool = std::make_unique<kernels::ThreadPool>(options.n_threads);
    engine->impl_->forward_options = {options.kda_mode, options.dump};
    return engine;
}

const gguf::GgufFile& Engine::file() const { return impl_->model->file(); }
const model::HParams& Engine::hparams() const { return impl_->model->hparams(); }
int32_t Engine::n_vocab() const { return int32_t(hparams().n_vocab); }
int64_t Engine::n_ctx_train() const { return hparams().n_ctx_train; }
int Engine::n_threads() const { return impl_->pool->size(); }
uint64_t Engine::weight_bytes_per_token() const { return impl_->model->weight_bytes_per_token(); }

std::unique_ptr<Session> Engine::new_session() const { return std::make_unique<Session>(*this); }

void Engine::decode(std::span<SequenceInput> inputs) const {
    std::vector<model::SequenceRequest> requests;
    const size_t V = size_t(n_vocab());
    for (SequenceInput& input : inputs) {
        if (!input.session || &input.session->engine() != this)
            throw Error("decode: every input needs a session of this engine");
        input.logits.assign(input.tokens.empty() ? 0 : (input.all_logits ? input.tokens.size() : 1) * V, 0.0f);
        requests.push_back({&input.session->state(), input.tokens, input.all_logits, input.logits.data()});
    }
    for (size_t i = 0; i < requests.size(); ++i)
        for (size_t j = 0; j < i; ++j)
            if (requests[i].state == requests[j].state) throw Error("decode: a session appears twice in one batch");
    std::lock_guard lock(impl_->forward_mutex);
    impl_->model->forward(*impl_->pool, requests, impl_->forward_options);
}

Session::Session(const Engine& engine)
    : engine_(engine), state_(std::make_unique<model::SequenceState>(engine.impl_->model->new_state())) {}

Session::~Session() = default;

std::vector<float> Session::eval(std::span<const int32_t> tokens, bool all_logits) {
    SequenceInput input{this, tokens, all_logits, {}};
    engine_.decode(std::span(&input, 1));
    return std::move(input.logits);
}

int64_t Session::position() const { return state_->position; }

void Session::reset() { *state_ = engine_.impl_->model->new_state(); }

SessionSnapshot Session::snapshot() const { return std::make_shared<const model::SequenceState>(*state_); }

void Session::restore(const SessionSnapshot& snapshot) {
    if (!snapshot || snapshot->model != state_->model) throw Error("restore: the snapshot is from another model");
    *state_ = *snapshot;
}

}  // namespace k3::runtime
