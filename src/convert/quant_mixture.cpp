#include "convert/quant_mixture.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <initializer_list>
#include <numeric>

#include "convert/tensor_plan.h"
#include "util/error.h"

namespace k3::convert {
namespace {

using tensor::Type;

struct MixtureInfo {
    Mixture mixture;
    std::string_view name;
    uint32_t file_type;
    Type base;
};
constexpr MixtureInfo kMixtures[] = {
    {Mixture::Q2_K, "Q2_K", 10, Type::Q2_K},        {Mixture::Q3_K_M, "Q3_K_M", 12, Type::Q3_K},
    {Mixture::Q4_K_M, "Q4_K_M", 15, Type::Q4_K},    {Mixture::Q5_K_M, "Q5_K_M", 17, Type::Q5_K},
    {Mixture::Q6_K, "Q6_K", 18, Type::Q6_K},        {Mixture::IQ2_XXS, "IQ2_XXS", 19, Type::IQ2_XXS},
    {Mixture::IQ2_XS, "IQ2_XS", 20, Type::IQ2_XS},  {Mixture::IQ3_XS, "IQ3_XS", 22, Type::IQ3_S},
    {Mixture::IQ3_XXS, "IQ3_XXS", 23, Type::IQ3_XXS}, {Mixture::IQ1_S, "IQ1_S", 24, Type::IQ1_S},
    {Mixture::IQ3_S, "IQ3_S", 26, Type::IQ3_S},     {Mixture::IQ3_M, "IQ3_M", 27, Type::IQ3_S},
    {Mixture::IQ2_S, "IQ2_S", 28, Type::IQ2_XS},    {Mixture::IQ2_M, "IQ2_M", 29, Type::IQ2_S},
    {Mixture::IQ1_M, "IQ1_M", 31, Type::IQ1_M},     {Mixture::TQ1_0, "TQ1_0", 36, Type::TQ1_0},
    {Mixture::TQ2_0, "TQ2_0", 37, Type::TQ2_0},
};
const MixtureInfo& info(Mixture mixture) {
    return *std::find_if(std::begin(kMixtures), std::end(kMixtures),
                         [&](const MixtureInfo& m) { return m.mixture == mixture; });
}

// llama.cpp's tensor categories, matched on name substrings in this order.
enum class Category { token_embd, output, attn_v_like, attn_k, attn_q, attn_output, ffn_up, ffn_gate, ffn_down, other };

bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

Category category_of(std::string_view name) {
    if (name == "output.weight") return Category::output;
    if (name == "token_embd.weight") return Category::token_embd;
    if (contains(name, "attn_qkv.weight") || contains(name, "attn_kv_b.weight") || contains(name, "attn_v.weight"))
        return Category::attn_v_like;
    if (contains(name, "attn_k.weight")) return Category::attn_k;
    if (contains(name, "attn_q.weight")) return Category::attn_q;
    if (contains(name, "attn_output.weight")) return Category::attn_output;
    if (contains(name, "ffn_up")) return Category::ffn_up;  // matched before ffn_down
    if (contains(name, "ffn_gate")) return Category::ffn_gate;
    if (contains(name, "ffn_down")) return Category::ffn_down;
    return Category::other;
}

int n_dims(const std::vector<int64_t>& ne) {
    int n = int(ne.size());
    while (n > 1 && ne[size_t(n - 1)] == 1) --n;
    return n;
}

bool allows_quantization(const MixtureTensor& t) {
    const std::string_view name = t.name;
    return n_dims(t.ne) >= 2 && name.ends_with("weight") && !contains(name, "_norm.weight") &&
           !contains(name, "ffn_gate_inp.weight") && !contains(name, "ssm_conv1d");
}

// "blk.N." -> N; -1 for tensors outside the layers (as llama.cpp's sscanf leaves it).
int layer_of(std::string_view name) {
    int layer = -1;
    std::sscanf(std::string(name).c_str(), "blk.%d.", &layer);
    return layer;
}

bool use_more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

bool is_one_of(Mixture m, std::initializer_list<Mixture> set) { return std::find(set.begin(), set.end(), m) != set.end(); }

TypeChoice with_fallback(Type type, const MixtureTensor& t) {
    const Type chosen = block_compatible_type(type, t.ne[0]);
    return {chosen, type};
}

}  // namespace

std::optional<Mixture> parse_mixture(std::string_view name) {
    for (const MixtureInfo& m : kMixtures) {
        if (m.name.size() == name.size() &&
            std::equal(name.begin(), name.end(), m.name.begin(), [](char a, char b) { return std::toupper((unsigned char)a) == b; }))
            return m.mixture;
    }
    return std::nullopt;
}

std::string_view mixture_name(Mixture mixture) { return info(mixture).name; }
uint32_t mixture_file_type(Mixture mixture) { return info(mixture).file_type; }

QuantMixture::QuantMixture(Mixture mixture, const MixtureModel& model, const std::vector<MixtureTensor>& tensors) {
    // llama.cpp visits tensors by (layer, name); the attn_v rule uses each one's rank in that order.
    std::vector<size_t> order(tensors.size());
    std::iota(order.begin(), order.end(), size_t(0));
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        const int la = layer_of(tensors[a].name), lb = layer_of(tensors[b].name);
        return la != lb ? la < lb : tensors[a].name < tensors[b].name;
    });
    bool has_output = false;
    int n_attn_v = 0;
    for (const MixtureTensor& t : tensors) {
        has_output |= category_of(t.name) == Category::output;
        n_attn_v += category_of(t.name) == Category::attn_v_like;
    }

    using M = Mixture;
    const Type base = info(mixture).base;
    const bool eight_experts = model.n_expert == 8;
    // The mixtures of llama_tensor_get_type_impl's IQ1/IQ2 branch; IQ2_S/IQ2_M take IQ3_S where the others take Q2_K.
    const bool iq_low = is_one_of(mixture, {M::IQ2_XXS, M::IQ2_XS, M::IQ1_S, M::IQ2_S, M::IQ2_M, M::IQ1_M});
    const Type iq_low_bump = is_one_of(mixture, {M::IQ2_S, M::IQ2_M}) ? Type::IQ3_S : Type::Q2_K;
    int i_attn_v = 0, i_ffn_down = 0, i_ffn_gate = 0, i_ffn_up = 0;
    // MoE models: the layer from the name (experts need not be consecutive); dense: the counter.
    auto layer_index = [&](const MixtureTensor& t, int& counter) {
        int i = counter++;
        if (model.n_expert > 1) {
            i = layer_of(t.name);
            if (i < 0 || i >= model.n_layer)
                throw Error("quantize mixture: cannot place tensor " + t.name + " in a layer [0, " +
                            std::to_string(model.n_layer) + ")");
        }
        return i;
    };
    choices_.assign(tensors.size(), TypeChoice{Type::F32});
    for (size_t index : order) {
        const MixtureTensor& t = tensors[index];
        if (!allows_quantization(t)) {
            choices_[index] = {t.source_type};
            continue;
        }
        Category category = category_of(t.name);
        if (category == Category::token_embd && !has_output) category = Category::output;  // tied embeddings
        Type type = base;
        if (category == Category::output) {
            if (t.ne[0] % tensor::traits(base).block_size != 0) type = Type::Q8_0;
            else if (is_one_of(mixture, {M::IQ2_XXS, M::IQ2_XS, M::IQ3_XXS, M::IQ1_S, M::IQ2_S, M::IQ2_M, M::IQ1_M}))
                type = Type::Q5_K;
            else type = Type::Q6_K;
        } else if (category == Category::token_embd) {
            if (is_one_of(mixture, {M::IQ2_XXS, M::IQ2_XS, M::IQ1_S, M::IQ1_M})) type = Type::Q2_K;
            else if (is_one_of(mixture, {M::IQ2_S, M::IQ2_M, M::IQ3_XXS})) type = Type::IQ3_S;
            else if (is_one_of(mixture, {M::TQ1_0, M::TQ2_0})) type = Type::Q4_K;
        } else if (iq_low) {
            if (category == Category::attn_v_like) {
                type = model.n_gqa >= 4 || model.n_expert >= 4 ? Type::Q4_K : iq_low_bump;
                ++i_attn_v;
            } else if (eight_experts && category == Category::attn_k) {
                type = Type::Q4_K;
            } else if (category == Category::ffn_down) {
                if (i_ffn_down < model.n_layer / 8) type = iq_low_bump;
                ++i_ffn_down;
            } else if (category == Category::attn_output) {
                if (eight_experts) type = Type::Q5_K;
                else if (is_one_of(mixture, {M::IQ1_S, M::IQ1_M})) type = Type::IQ2_XXS;
                else if (is_one_of(mixture, {M::IQ2_S, M::IQ2_M})) type = Type::IQ3_S;
            }
        } else {
            switch (category) {
                case Category::attn_v_like: {
                    const int i = i_attn_v++;
                    if (mixture == M::Q2_K) type = model.n_gqa >= 4 ? Type::Q4_K : Type::Q3_K;
                    else if (mixture == M::IQ3_XXS) type = model.n_gqa >= 4 ? Type::Q4_K : model.has_imatrix ? Type::IQ3_XXS : Type::IQ3_S;
                    else if (is_one_of(mixture, {M::IQ3_XS, M::IQ3_S}) && model.n_gqa >= 4) type = Type::Q4_K;
                    else if (mixture == M::IQ3_M) type = Type::Q4_K;
                    else if (mixture == M::Q3_K_M) type = i < 2 ? Type::Q5_K : Type::Q4_K;
                    else if (is_one_of(mixture, {M::Q4_K_M, M::Q5_K_M}) && use_more_bits(i, n_attn_v)) type = Type::Q6_K;
                    if (eight_experts) type = Type::Q8_0;
                    break;
                }
                case Category::attn_k:
                    if (eight_experts) type = Type::Q8_0;
                    else if (mixture == M::IQ3_XS) type = Type::IQ3_XXS;
                    else if (mixture == M::IQ3_XXS) type = Type::IQ2_S;
                    break;
                case Category::attn_q:
                    if (mixture == M::IQ3_XS) type = Type::IQ3_XXS;
                    else if (mixture == M::IQ3_XXS) type = Type::IQ2_S;
                    break;
                case Category::ffn_down: {
                    const int i = layer_index(t, i_ffn_down), n = model.n_layer;
                    if (mixture == M::Q2_K) type = Type::Q3_K;
                    else if (mixture == M::IQ3_XXS && !model.has_imatrix) type = i < n / 8 ? Type::Q4_K : Type::Q3_K;
                    else if (mixture == M::Q3_K_M) type = i < n / 16 ? Type::Q5_K : Type::Q4_K;
                    else if (mixture == M::IQ3_M && (i < n / 8 || (eight_experts && use_more_bits(i, n)))) type = Type::Q4_K;
                    else if (is_one_of(mixture, {M::Q4_K_M, M::Q5_K_M}) && use_more_bits(i, n)) type = Type::Q6_K;
                    break;
                }
                case Category::attn_output:
                    if (eight_experts) {
                        if (is_one_of(mixture, {M::Q2_K, M::Q3_K_M, M::Q4_K_M, M::IQ3_XS, M::IQ3_XXS, M::IQ3_S, M::IQ3_M}))
                            type = Type::Q5_K;
                    } else if (mixture == M::Q2_K) {
                        type = Type::Q3_K;
                    } else if (mixture == M::IQ3_XXS) {
                        type = Type::IQ3_S;
                    } else if (mixture == M::Q3_K_M || mixture == M::IQ3_M) {
                        type = Type::Q4_K;
                    }
                    break;
                case Category::ffn_gate:
                case Category::ffn_up: {
                    const int i = layer_index(t, category == Category::ffn_gate ? i_ffn_gate : i_ffn_up), n = model.n_layer;
                    if (mixture == M::IQ3_XS && i >= n / 8 && i < 7 * n / 8) type = Type::IQ3_XXS;
                    break;
                }
                case Category::token_embd:
                case Category::output:
                case Category::other: break;
            }
        }
        choices_[index] = with_fallback(type, t);
    }
}

}  // namespace k3::convert
