#include "convert/quant_mixture.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
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
    {Mixture::Q2_K, "Q2_K", 10, Type::Q2_K},     {Mixture::Q3_K_M, "Q3_K_M", 12, Type::Q3_K},
    {Mixture::Q4_K_M, "Q4_K_M", 15, Type::Q4_K}, {Mixture::Q5_K_M, "Q5_K_M", 17, Type::Q5_K},
    {Mixture::Q6_K, "Q6_K", 18, Type::Q6_K},
};
const MixtureInfo& info(Mixture mixture) {
    return *std::find_if(std::begin(kMixtures), std::end(kMixtures),
                         [&](const MixtureInfo& m) { return m.mixture == mixture; });
}

// llama.cpp's tensor categories, matched on name substrings in this order.
enum class Category { token_embd, output, attn_v_like, attn_k, attn_output, ffn_down, other };

bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

Category category_of(std::string_view name) {
    if (name == "output.weight") return Category::output;
    if (name == "token_embd.weight") return Category::token_embd;
    if (contains(name, "attn_qkv.weight") || contains(name, "attn_kv_b.weight") || contains(name, "attn_v.weight"))
        return Category::attn_v_like;
    if (contains(name, "attn_k.weight")) return Category::attn_k;
    if (contains(name, "attn_output.weight")) return Category::attn_output;
    if (contains(name, "ffn_up") || contains(name, "ffn_gate")) return Category::other;  // matched before ffn_down
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

TypeChoice with_fallback(Type type, const MixtureTensor& t) {
    const Type chosen = block_compatible_type(type, t.ne[0]);
    return {chosen, chosen != type};
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

    const Type base = info(mixture).base;
    const bool eight_experts = model.n_expert == 8;
    int i_attn_v = 0, i_ffn_down = 0;
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
        switch (category) {
            case Category::output:
                type = t.ne[0] % tensor::traits(base).block_size != 0 ? Type::Q8_0 : Type::Q6_K;
                break;
            case Category::attn_v_like: {
                const int i = i_attn_v++;
                if (mixture == Mixture::Q2_K) type = model.n_gqa >= 4 ? Type::Q4_K : Type::Q3_K;
                else if (mixture == Mixture::Q3_K_M) type = i < 2 ? Type::Q5_K : Type::Q4_K;
                else if ((mixture == Mixture::Q4_K_M || mixture == Mixture::Q5_K_M) && use_more_bits(i, n_attn_v))
                    type = Type::Q6_K;
                if (eight_experts) type = Type::Q8_0;
                break;
            }
            case Category::attn_k:
                if (eight_experts) type = Type::Q8_0;
                break;
            case Category::ffn_down: {
                // MoE models: the layer from the name (experts need not be consecutive); dense: a counter.
                int i = i_ffn_down++;
                if (model.n_expert > 1) {
                    i = layer_of(t.name);
                    if (i < 0 || i >= model.n_layer)
                        throw Error("quantize mixture: cannot place tensor " + t.name + " in a layer [0, " +
                                    std::to_string(model.n_layer) + ")");
                }
                if (mixture == Mixture::Q2_K) type = Type::Q3_K;
                else if (mixture == Mixture::Q3_K_M) type = i < model.n_layer / 16 ? Type::Q5_K : Type::Q4_K;
                else if ((mixture == Mixture::Q4_K_M || mixture == Mixture::Q5_K_M) && use_more_bits(i, model.n_layer))
                    type = Type::Q6_K;
                break;
            }
            case Category::attn_output:
                if (eight_experts) {
                    if (mixture == Mixture::Q2_K || mixture == Mixture::Q3_K_M || mixture == Mixture::Q4_K_M) type = Type::Q5_K;
                } else if (mixture == Mixture::Q2_K) {
                    type = Type::Q3_K;
                } else if (mixture == Mixture::Q3_K_M) {
                    type = Type::Q4_K;
                }
                break;
            case Category::token_embd:
            case Category::other: break;
        }
        choices_[index] = with_fallback(type, t);
    }
}

}  // namespace k3::convert
