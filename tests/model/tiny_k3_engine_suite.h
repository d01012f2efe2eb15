// A test suite sharing one loaded tiny-k3 fixture and its Engine (2 threads), loaded once per
// suite. Suite is the deriving class, so that each suite has its own pair.
#pragma once

#include <gtest/gtest.h>

#include "model/fixture_cases.h"
#include "runtime/engine.h"

namespace k3::testing {

template <class Suite>
class TinyK3EngineSuite : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        fixture_ = new ModelFixture(load_model_fixture("tiny-k3"));
        runtime::EngineOptions options;
        options.n_threads = 2;
        engine_ = runtime::Engine::load(fixture_->model_path, options).release();
    }
    static void TearDownTestSuite() {
        delete engine_;
        delete fixture_;
    }

    inline static ModelFixture* fixture_ = nullptr;
    inline static runtime::Engine* engine_ = nullptr;
};

}  // namespace k3::testing
