// Every SIMD level of vector_ops.h against the scalar reference (namespace reference), and its
// exp/tanh polynomials against std::exp/std::tanh in double: lengths that are not a multiple of
// the vector width, outputs aliasing inputs, and inputs far beyond the range where the
// activations saturate.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/vector_ops.h"

namespace k3::kernels {
namespace {

const int64_t kLengths[] = {1, 3, 7, 8, 9, 15, 16, 17, 31, 33, 64, 100, 2053};

// The SIMD levels this CPU has (the scalar one is the reference).
std::vector<Isa> simd_levels() {
    std::vector<Isa> levels;
    for (Isa isa : {Isa::avx2, Isa::avx512})
        if (isa_supported(isa)) levels.push_back(isa);
    return levels;
}

std::vector<float> random_vector(int64_t n, std::mt19937& rng, float scale) {
    std::normal_distribution<float> normal(0.0f, scale);
    std::vector<float> x(static_cast<size_t>(n));
    for (float& v : x) v = normal(rng);
    return x;
}

// |a - b| <= rel * |b| + abs, both finite exactly when the reference is (and NaN where it is).
void expect_close(const std::vector<float>& got, const std::vector<float>& want, double rel, double abs,
                  const std::string& what) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_EQ(std::isfinite(got[i]), std::isfinite(want[i])) << what << " i=" << i << " got " << got[i] << " want " << want[i];
        if (std::isnan(want[i])) {
            ASSERT_TRUE(std::isnan(got[i])) << what << " i=" << i;
            continue;
        }
        if (!std::isfinite(want[i])) {
            ASSERT_EQ(got[i], want[i]) << what << " i=" << i;
            continue;
        }
        ASSERT_NEAR(got[i], want[i], rel * std::fabs(want[i]) + abs) << what << " i=" << i;
    }
}

// Maximum relative error of fn (one level's elementwise op) against `exact` on [lo, hi].
template <class Fn, class Exact>
double max_relative_error(Fn fn, Exact exact, float lo, float hi, int steps) {
    std::vector<float> x(size_t(steps) + 1), y(x.size());
    for (int i = 0; i <= steps; ++i) x[size_t(i)] = lo + (hi - lo) * float(i) / float(steps);
    fn(x.data(), int64_t(x.size()), y.data());
    double worst = 0.0;
    for (size_t i = 0; i < x.size(); ++i) {
        const double want = exact(double(x[i]));
        if (want == 0.0) continue;
        worst = std::max(worst, std::fabs(double(y[i]) - want) / std::fabs(want));
    }
    return worst;
}

TEST(VectorOpsSimd, ExpAndTanhStayWithinTwoUlp) {
    for (Isa isa : simd_levels()) {
        const VectorOpsKernels& k = *vector_ops_kernels(isa);
        // exp over the range where std::exp is a normal float.
        const double exp_error = max_relative_error(k.exp, [](double x) { return std::exp(x); }, -87.3f, 88.7f, 400000);
        EXPECT_LT(exp_error, 2.4e-7) << isa_name(isa);  // 2 ulp (2^-23 = 1.19e-7)
        // tanh(u) as situ(gate = 1e4, u, beta = 1, lambda = 1): tanh(1e4) = sigmoid(1e4) = 1 exactly.
        const auto tanh = [&](const float* u, int64_t n, float* out) {
            const std::vector<float> gate(size_t(n), 1e4f);
            k.situ(gate.data(), u, 1.0f, 1.0f, n, out);
        };
        const double tanh_error = max_relative_error(tanh, [](double x) { return std::tanh(x); }, -20.0f, 20.0f, 400000);
        EXPECT_LT(tanh_error, 2.4e-7) << isa_name(isa);
        // Near 0, where 1 - 2/(e^2x + 1) would cancel: the small-|x| polynomial.
        EXPECT_LT(max_relative_error(tanh, [](double x) { return std::tanh(x); }, -1e-3f, 1e-3f, 20000), 2.4e-7);
        std::printf("[ %s ] exp max rel error %.3g on [-87.3, 88.7]; tanh %.3g on [-20, 20]\n", isa_name(isa), exp_error,
                    tanh_error);
    }
}

TEST(VectorOpsSimd, ElementwiseOpsMatchTheReferenceAtEveryLength) {
    std::mt19937 rng(11);
    for (Isa isa : simd_levels()) {
        const VectorOpsKernels& k = *vector_ops_kernels(isa);
        for (int64_t n : kLengths) {
            const std::string what = std::string(isa_name(isa)) + " n=" + std::to_string(n);
            const std::vector<float> x = random_vector(n, rng, 4.0f), y = random_vector(n, rng, 4.0f);
            std::vector<float> got(static_cast<size_t>(n)), want(static_cast<size_t>(n));
            k.exp(x.data(), n, got.data());
            reference::exp(x.data(), n, want.data());
            expect_close(got, want, 3e-7, 0.0, "exp " + what);
            k.sigmoid(x.data(), n, got.data());
            reference::sigmoid(x.data(), n, want.data());
            expect_close(got, want, 3e-7, 0.0, "sigmoid " + what);
            k.silu(x.data(), n, got.data());
            reference::silu(x.data(), n, want.data());
            expect_close(got, want, 3e-7, 1e-37, "silu " + what);
            got = want = y;
            k.multiply_sigmoid(x.data(), n, got.data());
            reference::multiply_sigmoid(x.data(), n, want.data());
            expect_close(got, want, 3e-7, 1e-37, "multiply_sigmoid " + what);
            // KDA's decayed dots: non-positive differences of cumulative decays.
            std::vector<float> g_j = random_vector(n, rng, 1.0f), g_i = g_j;
            for (size_t c = 0; c < g_i.size(); ++c) g_i[c] -= std::fabs(y[c]);
            float got_a = 0.0f, got_b = 0.0f, want_a = 0.0f, want_b = 0.0f;
            k.decayed_dots(g_i.data(), g_j.data(), x.data(), y.data(), x.data(), n, &got_a, &got_b);
            reference::decayed_dots(g_i.data(), g_j.data(), x.data(), y.data(), x.data(), n, &want_a, &want_b);
            double scale_a = 0.0, scale_b = 0.0;  // the sums of |terms|: what rounding is relative to
            for (size_t c = 0; c < g_i.size(); ++c) {
                const double e = std::exp(double(g_i[c]) - double(g_j[c])) * std::fabs(x[c]);
                scale_a += std::fabs(y[c]) * e;
                scale_b += std::fabs(x[c]) * e;
            }
            EXPECT_NEAR(got_a, want_a, 1e-6 * scale_a) << "decayed_dots a " << what;
            EXPECT_NEAR(got_b, want_b, 1e-6 * scale_b) << "decayed_dots b " << what;
            for (float linear_beta : {25.0f, 0.0f}) {
                k.situ(x.data(), y.data(), 4.0f, linear_beta, n, got.data());
                reference::situ(x.data(), y.data(), 4.0f, linear_beta, n, want.data());
                expect_close(got, want, 1e-6, 1e-37, "situ " + what);
            }
        }
    }
}

TEST(VectorOpsSimd, NormsAndSoftmaxMatchTheReferenceAtEveryLength) {
    std::mt19937 rng(12);
    for (Isa isa : simd_levels()) {
        const VectorOpsKernels& k = *vector_ops_kernels(isa);
        for (int64_t n : kLengths) {
            const std::string what = std::string(isa_name(isa)) + " n=" + std::to_string(n);
            const std::vector<float> x = random_vector(n, rng, 3.0f), w = random_vector(n, rng, 1.0f);
            std::vector<float> got(static_cast<size_t>(n)), want(static_cast<size_t>(n));
            const float scale = reference::rms_scale(x.data(), 1e-6f, n);
            EXPECT_NEAR(k.rms_scale(x.data(), 1e-6f, n), scale, 2e-7 * scale) << "rms_scale " << what;
            for (const float* weight : {w.data(), static_cast<const float*>(nullptr)}) {
                k.rms_norm(x.data(), weight, 1e-6f, n, got.data());
                reference::rms_norm(x.data(), weight, 1e-6f, n, want.data());
                expect_close(got, want, 2e-7, 0.0, "rms_norm " + what);
            }
            k.l2_norm(x.data(), 1e-6f, n, got.data());
            reference::l2_norm(x.data(), 1e-6f, n, want.data());
            expect_close(got, want, 2e-7, 0.0, "l2_norm " + what);
            // Softmax of all-negative scores: unused tail lanes must not win the max.
            got = want = x;
            for (float& v : got) v = -std::fabs(v) - 50.0f;
            want = got;
            k.softmax(got.data(), n);
            reference::softmax(want.data(), n);
            expect_close(got, want, 1e-6, 1e-30, "softmax " + what);
        }
    }
}

TEST(VectorOpsSimd, OutputMayAliasTheInput) {
    std::mt19937 rng(13);
    const int64_t n = 37;
    const std::vector<float> x = random_vector(n, rng, 3.0f), y = random_vector(n, rng, 3.0f);
    for (Isa isa : simd_levels()) {
        const VectorOpsKernels& k = *vector_ops_kernels(isa);
        std::vector<float> want(static_cast<size_t>(n));
        const auto check = [&](const std::vector<float>& in_place, const std::string& what) {
            expect_close(in_place, want, 0.0, 0.0, what + " " + isa_name(isa));  // same level, same bits
        };
        std::vector<float> a = x;
        k.rms_norm(x.data(), y.data(), 1e-6f, n, want.data());
        k.rms_norm(a.data(), y.data(), 1e-6f, n, a.data());
        check(a, "rms_norm");
        a = x;
        k.l2_norm(x.data(), 1e-6f, n, want.data());
        k.l2_norm(a.data(), 1e-6f, n, a.data());
        check(a, "l2_norm");
        for (auto op : {k.exp, k.sigmoid, k.silu}) {
            a = x;
            op(x.data(), n, want.data());
            op(a.data(), n, a.data());
            check(a, "elementwise");
        }
        k.situ(x.data(), y.data(), 4.0f, 25.0f, n, want.data());
        a = x;
        k.situ(a.data(), y.data(), 4.0f, 25.0f, n, a.data());
        check(a, "situ out=gate");
        a = y;
        k.situ(x.data(), a.data(), 4.0f, 25.0f, n, a.data());
        check(a, "situ out=up");
    }
}

TEST(VectorOpsSimd, ExtremeInputsStayFiniteWhereTheReferenceIs) {
    const float inf = std::numeric_limits<float>::infinity();
    std::vector<float> x = {0.0f,  -0.0f,   1e-30f,  -1e-30f, 0.5f,    0.625f,  -0.625f, 9.0f,   -9.0f,   20.0f,
                            -20.0f, 44.0f,  -44.0f,  87.3f,   -87.3f,  87.4f,   -87.4f,  88.7f,  -88.7f,  88.8f,
                            -88.8f, 103.0f, -103.0f, 104.0f,  -104.0f, 1000.0f, -1000.0f, 1e30f, -1e30f, 3e38f,
                            -3e38f, inf,    -inf};
    const int64_t n = int64_t(x.size());
    for (Isa isa : simd_levels()) {
        const VectorOpsKernels& k = *vector_ops_kernels(isa);
        const std::string what = isa_name(isa);
        std::vector<float> got(x.size()), want(x.size());
        k.exp(x.data(), n, got.data());
        reference::exp(x.data(), n, want.data());
        expect_close(got, want, 3e-7, 1.2e-38, "exp " + what);  // 0 where std::exp is denormal
        k.sigmoid(x.data(), n, got.data());
        reference::sigmoid(x.data(), n, want.data());
        expect_close(got, want, 3e-7, 1.2e-38, "sigmoid " + what);
        k.silu(x.data(), n, got.data());
        reference::silu(x.data(), n, want.data());
        expect_close(got, want, 3e-7, 1.2e-36, "silu " + what);
        for (float linear_beta : {25.0f, 0.0f}) {
            k.situ(x.data(), x.data(), 4.0f, linear_beta, n, got.data());
            reference::situ(x.data(), x.data(), 4.0f, linear_beta, n, want.data());
            expect_close(got, want, 1e-6, 1e-36, "situ " + what);
        }
        std::vector<float> scores = {1000.0f, -1000.0f, 88.0f, 1001.0f, -3e38f};
        std::vector<float> scores_ref = scores;
        k.softmax(scores.data(), int64_t(scores.size()));
        reference::softmax(scores_ref.data(), int64_t(scores_ref.size()));
        expect_close(scores, scores_ref, 1e-6, 1e-38, "softmax " + what);
    }
}

TEST(VectorOpsSimd, CausalConvMatchesTheReference) {
    std::mt19937 rng(14);
    for (Isa isa : simd_levels()) {
        const VectorOpsKernels& k = *vector_ops_kernels(isa);
        for (int64_t channels : {1, 5, 16, 37}) {
            for (int kernel : {1, 2, 4}) {
                for (int64_t n_tokens : {1, 2, 3, 9}) {
                    const int64_t u_stride = channels + 3, out_stride = channels + 2;
                    const std::vector<float> u = random_vector(n_tokens * u_stride, rng, 1.0f);
                    const std::vector<float> w = random_vector(channels * kernel, rng, 1.0f);
                    std::vector<float> state = random_vector(channels * (kernel - 1), rng, 1.0f), state_ref = state;
                    std::vector<float> out(size_t(n_tokens * out_stride), -7.0f), out_ref = out;
                    k.causal_conv(u.data(), u_stride, n_tokens, channels, w.data(), kernel, state.data(), out.data(),
                                  out_stride);
                    reference::causal_conv(u.data(), u_stride, n_tokens, channels, w.data(), kernel, state_ref.data(),
                                           out_ref.data(), out_stride);
                    const std::string what = std::string(isa_name(isa)) + " c=" + std::to_string(channels) +
                                             " k=" + std::to_string(kernel) + " t=" + std::to_string(n_tokens);
                    expect_close(out, out_ref, 1e-5, 1e-6, "out " + what);  // padding between rows untouched too
                    expect_close(state, state_ref, 0.0, 0.0, "state " + what);
                }
            }
        }
    }
}

}  // namespace
}  // namespace k3::kernels
