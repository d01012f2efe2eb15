#!/usr/bin/env bash
# k3 against llama.cpp on the same GGUF and threads: `k3 bench` and `llama-bench` interleaved,
# REPS rounds (default 3) of pp512 and tg128 each, then the medians, the ratios k3 / llama.cpp of
# the medians and the range of the rounds' own ratios.
# Never part of CTest; run it on an otherwise idle machine.
#
#   bench/compare_llama_cpp.sh LLAMA_BENCH MODEL [THREADS]
#   bench/compare_llama_cpp.sh ~/llama.cpp/build/bin/llama-bench /work/tmp/bench.gguf 2
#
# THREADS defaults to the number of online CPUs. K3 (default build/k3 beside this script's
# repository), REPS, K3_ARGS (e.g. --exact), K3_ISA (k3's level cap, e.g. avx2; printed
# with the ISA that ran) and K3_PREFETCH (nta or t1: decode's prefetch hint, printed) can be set
# in the environment.
set -euo pipefail

if [[ $# -lt 2 || $1 == -h || $1 == --help ]]; then
    sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
llama_bench=$1
model=$2
threads=${3:-$(nproc)}
k3=${K3:-$(dirname "$0")/../build/k3}
reps=${REPS:-3}
for tool in "$llama_bench" "$k3"; do
    [[ -x $tool ]] || { echo "compare_llama_cpp: $tool is not an executable" >&2; exit 2; }
done
[[ -r $model ]] || { echo "compare_llama_cpp: cannot read $model" >&2; exit 2; }
command -v jq >/dev/null || { echo "compare_llama_cpp: needs jq (scripts/install-deps.sh)" >&2; exit 2; }

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
spread() { sort -g | awk 'NR == 1 { low = $1 } { high = $1 } END { printf "%.2f-%.2f", low, high }'; }

# One read of the file first, so that whichever tool runs first does not also pay for storage.
cat "$model" >/dev/null

k3_pp=() k3_tg=() k3_bound=() ll_pp=() ll_tg=()
for ((i = 1; i <= reps; ++i)); do
    # shellcheck disable=SC2086  # K3_ARGS is a list of options
    k3_json=$("$k3" bench -m "$model" -p 512 -n 128 -t "$threads" -r 1 --json ${K3_ARGS:-})
    k3_pp+=("$(jq -r .pp_tokens_per_s <<<"$k3_json")")
    k3_tg+=("$(jq -r .tg_tokens_per_s <<<"$k3_json")")
    k3_bound+=("$(jq -r .bandwidth_bound_fraction <<<"$k3_json")")
    ll_json=$("$llama_bench" -m "$model" -p 512 -n 128 -t "$threads" -r 1 -o json 2>/dev/null)
    ll_pp+=("$(jq -r '.[] | select(.n_prompt > 0 and .n_gen == 0) | .avg_ts' <<<"$ll_json")")
    ll_tg+=("$(jq -r '.[] | select(.n_gen > 0 and .n_prompt == 0) | .avg_ts' <<<"$ll_json")")
    echo "round $i/$reps: k3 pp512 ${k3_pp[-1]} tg128 ${k3_tg[-1]} (bound ${k3_bound[-1]}) | llama.cpp pp512 ${ll_pp[-1]} tg128 ${ll_tg[-1]}" >&2
done

k3_pp_m=$(printf '%s\n' "${k3_pp[@]}" | median)
k3_tg_m=$(printf '%s\n' "${k3_tg[@]}" | median)
ll_pp_m=$(printf '%s\n' "${ll_pp[@]}" | median)
ll_tg_m=$(printf '%s\n' "${ll_tg[@]}" | median)
# The bound divides each round's tg by the bandwidth probed in that round, so it too is a median.
k3_bound_m=$(printf '%s\n' "${k3_bound[@]}" | median)
k3_bound_range=$(printf '%s\n' "${k3_bound[@]}" | spread)
echo "model $model, $threads threads, medians of $reps; k3 (K3_ISA=${K3_ISA:-unset}): $(jq -r '"numerics \(.numerics), isa \(.isa), integer \(.integer_isa), decode prefetch \(.decode_prefetch)"' <<<"$k3_json"), bandwidth bound $k3_bound_m (rounds $k3_bound_range)"
# Each round runs both tools back to back, so its own ratio shares that moment's load on the
# host: their range shows how far the noise reaches.
round_ratios() {
    local -n ours=$1 theirs=$2
    local i
    for ((i = 0; i < reps; ++i)); do awk -v a="${ours[i]}" -v b="${theirs[i]}" 'BEGIN { print a / b }'; done | spread
    echo x
}
awk -v a="$k3_pp_m" -v b="$ll_pp_m" -v r="$(round_ratios k3_pp ll_pp)" \
    'BEGIN { printf "pp512  k3 %8.2f  llama.cpp %8.2f tokens/s  ratio %.2fx  (rounds %s)\n", a, b, a / b, r }'
awk -v a="$k3_tg_m" -v b="$ll_tg_m" -v r="$(round_ratios k3_tg ll_tg)" \
    'BEGIN { printf "tg128  k3 %8.2f  llama.cpp %8.2f tokens/s  ratio %.2fx  (rounds %s)\n", a, b, a / b, r }'
