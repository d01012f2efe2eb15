// `k3 bench`: prompt-processing and generation speed, peak memory, and how close generation
// comes to the memory-bandwidth bound ("speed of light", STYLE.md).
#include <CLI/CLI.hpp>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/numerics_option.h"
#include "cli/options.h"
#include "cli/parallel_option.h"
#include "cli/residency_options.h"
#include "gguf/gguf_file.h"
#include "kernels/int_dot.h"
#include "kernels/isa.h"
#include "kernels/thread_pool.h"
#include "model/hparams.h"
#include "runtime/engine.h"
#include "runtime/memory_budget.h"
#include "runtime/session.h"
#include "util/byte_size.h"

namespace k3::cli {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
}

// Bytes the bandwidth probe reads: four times the last-level cache, so that no pass is served
// from it; at least 256 MiB where the cache's size is unknown.
size_t probe_bytes() {
    const long last_level = sysconf(_SC_LEVEL3_CACHE_SIZE);  // 0 or -1 when unknown
    return std::max(size_t(256) << 20, last_level > 0 ? 4 * size_t(last_level) : 0);
}

// Read bandwidth in bytes/s: a pool of the run's n_threads threads summing chunks of `regions`,
// claimed as a matmul's tiles are, so that a thread the scheduler holds back does not leave its
// share unread; the best of 8 passes, so that a pass slowed by another process does not count.
double measure_read_bandwidth(int n_threads, std::span<const std::span<const uint8_t>> regions) {
    size_t total = 0;
    for (const auto& r : regions) total += r.size();
    const size_t chunk = std::max<size_t>(4096, total / (size_t(n_threads) * 16));
    std::vector<std::span<const uint8_t>> chunks;
    for (const auto& r : regions)
        for (size_t at = 0; at < r.size(); at += chunk) chunks.push_back(r.subspan(at, std::min(chunk, r.size() - at)));
    kernels::ThreadPool pool(n_threads);
    std::atomic<uint64_t> sink{0};
    double best = 0.0;
    for (int pass = 0; pass < 8; ++pass) {
        const auto start = Clock::now();
        pool.parallel_for(int64_t(chunks.size()), [&](int64_t c, int) {
            const std::span<const uint8_t> bytes = chunks[size_t(c)];
            uint64_t sum = 0;
            for (size_t i = 0; i + sizeof(uint64_t) <= bytes.size(); i += sizeof(uint64_t)) {
                uint64_t word;
                std::memcpy(&word, bytes.data() + i, sizeof word);
                sum += word;
            }
            sink += sum;
        });
        best = std::max(best, double(total) / seconds_since(start));
    }
    return best;
}

// The probe over a buffer of `bytes` of its own.
double measure_buffer_read_bandwidth(int n_threads, size_t bytes) {
    const std::vector<uint8_t> buffer(bytes, 1);
    const std::span<const uint8_t> region(buffer);
    return measure_read_bandwidth(n_threads, std::span(&region, 1));
}

// The probe over the model's own weights, the pages decode reads (through the mapping): the
// tensors in file order, up to `bytes` of them. The buffer alone can under-read: on one VM a
// buffer aligned to 2 MiB read at 20 GB/s where the same loop read 26-36 GB/s elsewhere.
double measure_weight_read_bandwidth(int n_threads, std::span<const gguf::TensorInfo> tensors, size_t bytes) {
    std::vector<std::span<const uint8_t>> regions;
    size_t taken = 0;
    for (const gguf::TensorInfo& t : tensors) {
        if (taken >= bytes) break;
        regions.emplace_back(t.data, size_t(t.n_bytes));
        taken += size_t(t.n_bytes);
    }
    return measure_read_bandwidth(n_threads, regions);
}

// Bytes this process has had read from storage (/proc/self/io's read_bytes: page faults of the
// mapped model and the expert cache's reads alike; 0 where the kernel does not count them).
uint64_t storage_read_bytes() {
    std::FILE* io = std::fopen("/proc/self/io", "r");
    if (!io) return 0;
    unsigned long long bytes = 0;
    char line[128];
    while (std::fgets(line, sizeof line, io))
        if (std::sscanf(line, "read_bytes: %llu", &bytes) == 1) break;
    std::fclose(io);
    return bytes;
}

// A field of /proc/self/status in bytes ("VmHWM:", the peak resident set; "VmRSS:"); 0 where
// unreadable.
uint64_t status_bytes(const std::string& field) {
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);)
        if (line.compare(0, field.size(), field) == 0) return std::stoull(line.substr(field.size())) * 1024;  // kB
    return 0;
}

// Of the resident bytes of the mappings that hold `tensors`, the share the kernel maps with huge
// pages (/proc/self/smaps' FilePmdMapped over Rss; 0 where unreadable). Decode reads every weight
// once per token: mapped in 4 KiB pages it walks the page tables for each page (one thread's tg128 of
// the bench mock ran 24 tokens/s with its file cached in small folios, 31 in 2 MiB ones, on a Zen
// 5 VM), and a kernel whose page cache holds no large folios for the file system maps none.
double weights_huge_page_fraction(std::span<const gguf::TensorInfo> tensors) {
    std::vector<std::pair<uintptr_t, uintptr_t>> spans;  // every tensor's [begin, end)
    for (const gguf::TensorInfo& t : tensors)
        spans.emplace_back(reinterpret_cast<uintptr_t>(t.data), reinterpret_cast<uintptr_t>(t.data) + t.n_bytes);
    std::ifstream smaps("/proc/self/smaps");
    uint64_t resident = 0, huge = 0;
    bool holds_weights = false;
    for (std::string line; std::getline(smaps, line);) {
        unsigned long long begin = 0, end = 0, kib = 0;
        char dash = 0;
        if (std::sscanf(line.c_str(), "%llx%c%llx", &begin, &dash, &end) == 3 && dash == '-') {
            holds_weights = std::any_of(spans.begin(), spans.end(), [&](const auto& s) { return s.first < end && begin < s.second; });
        } else if (holds_weights && std::sscanf(line.c_str(), "Rss: %llu kB", &kib) == 1) {
            resident += kib;
        } else if (holds_weights && std::sscanf(line.c_str(), "FilePmdMapped: %llu kB", &kib) == 1) {
            huge += kib;
        }
    }
    return resident > 0 ? double(huge) / double(resident) : 0.0;
}

// Restarts the peak resident set from the current one ("5" to clear_refs), so that the probe's
// buffer is not reported as the run's peak; false where the kernel refuses.
bool restart_peak_resident() {
    std::ofstream clear_refs("/proc/self/clear_refs");
    clear_refs << "5";
    clear_refs.flush();
    return bool(clear_refs);
}

}  // namespace

int run_bench(int argc, char** argv) {
    CLI::App app{"Measure prompt-processing and generation speed", "k3 bench"};
    show_defaults(app);
    std::string model_path;
    int n_prompt = 512, n_gen = 128, threads = 0, repetitions = 3;
    bool json = false, no_warmup = false;
    app.add_option("-m,--model", model_path, "model GGUF")->required();
    app.add_option("-p,--n-prompt", n_prompt, "prompt tokens per prompt-processing run (0: skip)")->check(at_least(0));
    app.add_option("-n,--n-gen", n_gen, "tokens per generation run (0: skip)")->check(at_least(0));
    app.add_option("-t,--threads", threads, "worker threads (0: all hardware threads)")->check(thread_count());
    app.add_option("-r,--repetitions", repetitions, "runs per measurement; the median is reported")->check(at_least(1));
    app.add_flag("--json", json, "print one JSON object");
    app.add_flag("--no-warmup", no_warmup,
                 "skip the untimed prompt run before the timed ones (as llama-bench's: the model's pages are read in there)");
    runtime::EngineOptions options;
    add_residency_options(app, options.residency);
    add_numerics_option(app, options.numerics);
    ParallelOptions parallel_options;
    add_parallel_options(app, parallel_options);
    if (const std::optional<int> exit_code = parse_options(app, argc, argv)) return *exit_code;
    const auto collective = start_parallel(parallel_options, options);

    options.n_threads = threads;
    options.logits_on_root_only = true;  // bench never reads the logits: the other ranks need none
    const auto load_start = Clock::now();
    auto engine = runtime::Engine::load(model_path, options);
    const double load_s = seconds_since(load_start);
    std::mt19937 rng(1234);
    auto random_tokens = [&](int n) {
        std::vector<int32_t> tokens(static_cast<size_t>(n));
        for (int32_t& t : tokens) t = int32_t(rng() % uint32_t(engine->n_vocab()));
        return tokens;
    };

    std::vector<double> pp_rates, tg_rates;
    if (n_prompt > 0 && !no_warmup) engine->new_session()->eval(random_tokens(n_prompt));
    for (int r = 0; r < repetitions && n_prompt > 0; ++r) {
        const std::vector<int32_t> prompt = random_tokens(n_prompt);
        auto session = engine->new_session();
        const auto start = Clock::now();
        session->eval(prompt);
        pp_rates.push_back(n_prompt / seconds_since(start));
    }
    // The bandwidth probe runs right before generation, so that the bound and the rate it divides
    // see the same machine (other processes, clocks), beside the model. Under a memory budget, or
    // where its buffer would not fit beside the model, it runs once the model is freed instead;
    // so do a parallel job's ranks, all at once, their rates adding up: the bound of a job is the
    // whole model's bytes per token over the memory all its ranks read.
    const int n_threads = engine->n_threads();
    double peak = double(status_bytes("VmHWM:"));  // loading and prompt processing
    const std::optional<runtime::MemoryLimit> limit = runtime::detect_memory_limit();
    const bool probe_beside_model = n_gen > 0 && !collective && !engine->expert_cache_counters() &&
                                    (!limit || status_bytes("VmRSS:") + probe_bytes() <= limit->bytes) &&
                                    restart_peak_resident();
    // The bound is the faster of two reads: a buffer of the probe's own, and the model's weights.
    double buffer_bandwidth = probe_beside_model ? measure_buffer_read_bandwidth(n_threads, probe_bytes()) : 0.0;
    const double weight_bandwidth =
        probe_beside_model ? measure_weight_read_bandwidth(n_threads, engine->tensors(), probe_bytes()) : 0.0;
    double bandwidth = std::max(buffer_bandwidth, weight_bandwidth);
    if (probe_beside_model) restart_peak_resident();
    // The expert cache over the timed generation steps (with a budget): hits, disk reads, I/O waits.
    double tg_seconds = 0.0, tg_wait_seconds = 0.0;
    uint64_t tg_hits = 0, tg_requested = 0, tg_bytes_read = 0, tg_storage_bytes = 0;
    parallel::CollectiveCounters tg_collectives;  // in a parallel job: this rank's over the timed steps
    for (int r = 0; r < repetitions && n_gen > 0; ++r) {
        auto session = engine->new_session();
        int32_t token = random_tokens(1)[0];
        session->eval(std::span(&token, 1));  // first step allocates the caches
        const std::optional<runtime::ExpertCacheCounters> before = engine->expert_cache_counters();
        const parallel::CollectiveCounters collectives_before =
            collective ? collective->counters() : parallel::CollectiveCounters{};
        const uint64_t storage_before = storage_read_bytes();
        const auto start = Clock::now();
        for (int i = 0; i < n_gen; ++i) {
            token = int32_t(rng() % uint32_t(engine->n_vocab()));
            session->eval(std::span(&token, 1));
        }
        const double seconds = seconds_since(start);
        tg_seconds += seconds;
        tg_rates.push_back(n_gen / seconds);
        tg_storage_bytes += storage_read_bytes() - storage_before;
        if (collective) {
            const parallel::CollectiveCounters after = collective->counters();
            tg_collectives.calls += after.calls - collectives_before.calls;
            tg_collectives.bytes += after.bytes - collectives_before.bytes;
            tg_collectives.wait_seconds += after.wait_seconds - collectives_before.wait_seconds;
        }
        if (const std::optional<runtime::ExpertCacheCounters> after = engine->expert_cache_counters()) {
            tg_hits += after->hits - before->hits;
            tg_requested += after->hits + after->misses - before->hits - before->misses;
            tg_bytes_read += after->bytes_read - before->bytes_read;
            tg_wait_seconds += after->wait_seconds - before->wait_seconds;
        }
    }
    const double pp = median(pp_rates), tg = median(tg_rates);
    // Read through the file's mapping (no expert cache): how much of it huge pages map.
    const bool mapped = !engine->expert_cache_counters();
    const double huge_pages = mapped ? weights_huge_page_fraction(engine->tensors()) : 0.0;
    peak = std::max(peak, double(status_bytes("VmHWM:")));
    const double tg_tokens = double(n_gen) * repetitions;
    const auto per_token = [&](double total) { return tg_tokens > 0 ? total / tg_tokens : 0.0; };
    // Every rank's peak and storage reads per generated token, in rank order (rank 0 prints them).
    std::vector<double> rank_peaks, rank_storage_reads;
    const auto gathered = [&](double value) {
        std::vector<double> values;
        for (const std::string& v : collective->allgather_bytes(std::to_string(value), options.parallel_start_timeout))
            values.push_back(std::stod(v));
        return values;
    };
    const double storage_per_token = per_token(double(tg_storage_bytes));
    if (collective) {
        rank_peaks = gathered(peak);
        rank_storage_reads = gathered(storage_per_token);
    }
    const double bytes_per_token = double(engine->weight_bytes_per_token());
    struct CacheFigures {
        double hit_rate = 0, bytes_per_token = 0, io_wait_fraction = 0;
        uint64_t capacity = 0, peak = 0;
    };
    std::optional<CacheFigures> cache;
    if (const std::optional<runtime::ExpertCacheCounters> counters = engine->expert_cache_counters()) {
        cache = CacheFigures{tg_requested > 0 ? double(tg_hits) / double(tg_requested) : 0.0,
                             per_token(double(tg_bytes_read)),
                             tg_seconds > 0 ? tg_wait_seconds / tg_seconds : 0.0, counters->capacity,
                             counters->peak_bytes};
    }
    // The model goes before the probe's buffer arrives: under a memory cap both may not fit.
    if (!probe_beside_model && n_gen > 0) {
        engine.reset();
        if (collective) gathered(0.0);  // a barrier: the ranks probe at once
        // Under a memory limit, at most half of what the process leaves of it: a cap below the
        // buffer would kill the run (the 60% caps of bench/run_capped.sh do).
        size_t bytes = probe_bytes();
        if (limit) {
            const uint64_t resident = status_bytes("VmRSS:");
            bytes = std::min<size_t>(bytes, limit->bytes > resident ? (limit->bytes - resident) / 2 : 0);
        }
        bandwidth = buffer_bandwidth = measure_buffer_read_bandwidth(n_threads, std::max(bytes, size_t(64) << 20));
        if (collective) {
            const std::vector<double> rates = gathered(bandwidth);
            bandwidth = std::accumulate(rates.begin(), rates.end(), 0.0);
        }
    }
    // The bound is of generation only: a run without it probes nothing.
    const char* probe = n_gen == 0 ? "none" : probe_beside_model ? "before_generation" : "after_run";
    // Fraction of the bound: bytes a generated token must read, at the achieved rate, over
    // what the memory system can deliver.
    const double fraction = bandwidth > 0 ? tg * bytes_per_token / bandwidth : 0.0;
    const char* numerics = kernels::numerics_name(options.numerics);
    const char* isa = kernels::isa_name(kernels::best_isa());
    const char* integer_isa = options.numerics == kernels::Numerics::native ? kernels::int_dot_level_name(kernels::best_isa()) : "none";
    const char* prefetch = kernels::stream_prefetch_name(kernels::stream_prefetch());
    if (json) {
        std::printf(
            "{\"model\":\"%s\",\"threads\":%d,\"n_prompt\":%d,\"n_gen\":%d,\"repetitions\":%d,"
            "\"load_s\":%.3f,\"pp_tokens_per_s\":%.3f,\"tg_tokens_per_s\":%.3f,\"peak_rss_bytes\":%.0f,"
            "\"weight_bytes_per_token\":%.0f,\"read_bandwidth_bytes_per_s\":%.0f,\"bandwidth_probe\":\"%s\","
            "\"buffer_read_bandwidth_bytes_per_s\":%.0f,\"weight_read_bandwidth_bytes_per_s\":%.0f,"
            "\"bandwidth_bound_fraction\":%.4f,\"tg_storage_read_bytes_per_token\":%.0f,"
            "\"numerics\":\"%s\",\"isa\":\"%s\",\"integer_isa\":\"%s\",\"decode_prefetch\":\"%s\"",
            model_path.c_str(), n_threads, n_prompt, n_gen, repetitions, load_s, pp, tg, peak,
            bytes_per_token, bandwidth, probe, buffer_bandwidth, weight_bandwidth, fraction,
            storage_per_token, numerics, isa, integer_isa, prefetch);
        if (mapped) std::printf(",\"mapped_weights_huge_page_fraction\":%.4f", huge_pages);
        if (cache)
            std::printf(",\"expert_cache\":{\"capacity_bytes\":%llu,\"peak_bytes\":%llu,\"tg_hit_rate\":%.4f,"
                        "\"tg_disk_bytes_per_token\":%.0f,\"tg_io_wait_fraction\":%.4f}",
                        (unsigned long long)cache->capacity, (unsigned long long)cache->peak, cache->hit_rate,
                        cache->bytes_per_token, cache->io_wait_fraction);
        if (collective) {
            std::printf(",\"parallel\":{\"ranks\":%d,\"peak_rss_bytes\":[", collective->size());
            for (size_t r = 0; r < rank_peaks.size(); ++r) std::printf("%s%.0f", r ? "," : "", rank_peaks[r]);
            std::printf("],\"tg_storage_read_bytes_per_token\":[");
            for (size_t r = 0; r < rank_storage_reads.size(); ++r)
                std::printf("%s%.0f", r ? "," : "", rank_storage_reads[r]);
            std::printf("],\"tg_collectives_per_token\":%.1f,\"tg_received_bytes_per_token\":%.0f,"
                        "\"tg_collective_wait_fraction\":%.4f}",
                        per_token(double(tg_collectives.calls)), per_token(double(tg_collectives.bytes)),
                        tg_seconds > 0 ? tg_collectives.wait_seconds / tg_seconds : 0.0);
        }
        std::printf("}\n");
    } else {
        std::printf("model            %s (%d threads)\n", model_path.c_str(), n_threads);
        std::printf("load             %.3f s\n", load_s);
        std::printf("numerics         %s (f32 kernels %s, integer kernels %s, decode prefetch %s)\n", numerics, isa,
                    integer_isa, prefetch);
        if (n_prompt > 0) std::printf("prompt (pp%d)    %.2f tokens/s (median of %d)\n", n_prompt, pp, repetitions);
        if (n_gen > 0) std::printf("generate (tg%d)  %.2f tokens/s (median of %d)\n", n_gen, tg, repetitions);
        std::printf("peak RSS         %.1f MiB\n", peak / (1 << 20));
        std::printf("weights/token    %.2f MiB", bytes_per_token / (1 << 20));
        if (n_gen > 0) {
            if (probe_beside_model)
                std::printf("; read bandwidth %.2f GB/s (probed before generation: buffer %.2f, weights %.2f)\n",
                            bandwidth / 1e9, buffer_bandwidth / 1e9, weight_bandwidth / 1e9);
            else
                std::printf("; read bandwidth %.2f GB/s (probed after the run)\n", bandwidth / 1e9);
            std::printf("bandwidth bound  %.1f%% (tg x weights/token / bandwidth)\n", 100.0 * fraction);
            std::printf("storage reads    %.2f MiB/token during generation\n", storage_per_token / (1 << 20));
        } else {
            std::printf("\n");
        }
        if (mapped) std::printf("mapped weights   %.1f%% of the resident mapping in huge pages\n", 100.0 * huge_pages);
        if (cache) {
            std::printf("expert cache     %s (peak %s)\n", util::format_byte_size(cache->capacity).c_str(),
                        util::format_byte_size(cache->peak).c_str());
            if (n_gen > 0)
                std::printf("generation       %.1f%% cache hits, %.2f MiB read from disk/token, %.1f%% of the time waiting on I/O\n",
                            100.0 * cache->hit_rate, cache->bytes_per_token / (1 << 20), 100.0 * cache->io_wait_fraction);
        }
        if (collective) {
            std::printf("parallel         %d ranks; peak RSS per rank", collective->size());
            for (size_t r = 0; r < rank_peaks.size(); ++r)
                std::printf("%s %.1f", r ? "," : "", rank_peaks[r] / (1 << 20));
            std::printf(" MiB\n");
            if (n_gen > 0) {
                std::printf("                 storage reads per rank");
                for (size_t r = 0; r < rank_storage_reads.size(); ++r)
                    std::printf("%s %.2f", r ? "," : "", rank_storage_reads[r] / (1 << 20));
                std::printf(" MiB/token\n");
            }
            if (n_gen > 0)
                std::printf("collectives      %.1f per generated token, %.1f KiB received per token, %.1f%% of the "
                            "generation time in them (rank 0)\n",
                            per_token(double(tg_collectives.calls)), per_token(double(tg_collectives.bytes)) / 1024,
                            100.0 * (tg_seconds > 0 ? tg_collectives.wait_seconds / tg_seconds : 0.0));
        }
    }
    return 0;
}

}  // namespace k3::cli
