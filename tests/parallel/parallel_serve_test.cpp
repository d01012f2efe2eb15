// `k3 serve` and `k3 chat` across two ranks (issue #17): rank 0 owns the API, the tokenizer and
// the scheduler, rank 1 follows its passes. Greedy answers, two requests decoded together and a
// prompt-cache resume must be what one process answers; SIGTERM (which mpirun hands every rank)
// ends the job cleanly.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <signal.h>

#include <future>
#include <sstream>
#include <string>
#include <vector>

#include "parallel/collective.h"
#include "server/server_harness.h"
#include "support/test_support.h"

namespace k3::testing {
namespace {

using nlohmann::json;

#ifdef K3_MPIEXEC
const std::string kModel = fixture("tiny-k3/model.gguf");
const std::vector<std::string> kTwoRanks = {K3_MPIEXEC, "--oversubscribe", "--allow-run-as-root", "--timeout", "120",
                                            "-x", "ASAN_OPTIONS=detect_leaks=0", "-np", "2"};

json chat_body(const json& messages) {
    return {{"messages", messages}, {"temperature", 0}, {"max_tokens", 12}};
}

json post_chat(const ServerProcess& server, const json& body) {
    const HttpReply reply = http_request(server.port(), "POST", "/v1/chat/completions", body.dump());
    EXPECT_EQ(reply.status, 200) << reply.body;
    return json::parse(reply.body, nullptr, false);
}

// What a client compares: the message and the token counts (not ids or timings). The cached
// share of the prompt depends on the order requests arrive in, so a pair sent together leaves it out.
json answer_of(const json& reply, bool with_cached = true) {
    json usage = reply["usage"];
    if (!with_cached) usage.erase("prompt_tokens_details");
    return {{"message", reply["choices"][0]["message"]}, {"finish_reason", reply["choices"][0]["finish_reason"]},
            {"usage", usage}};
}

// The process of an mpirun job that is its rank 0 (by the rank Open MPI gives it), or -1.
pid_t rank_zero_of(pid_t mpirun) {
    std::istringstream children(read_text("/proc/" + std::to_string(mpirun) + "/task/" + std::to_string(mpirun) + "/children"));
    for (pid_t child; children >> child;) {
        const std::string environ = read_text("/proc/" + std::to_string(child) + "/environ");
        if (environ.find(std::string("OMPI_COMM_WORLD_RANK=0") + '\0') != std::string::npos) return child;
    }
    return -1;
}

TEST(ParallelServe, TwoRanksAnswerWhatOneProcessAnswers) {
    const json first_turn = json::array({{{"role", "user"}, {"content", "Hello there, who are you?"}}});
    const json other = json::array({{{"role", "user"}, {"content", "Count to five."}}});
    const std::vector<std::string> args = {"--parallel", "2", "--cache-checkpoint-every", "16"};

    json alone_first, alone_other, alone_second;
    {
        ServerProcess alone(kModel, args, {}, {}, 1);
        alone_first = post_chat(alone, chat_body(first_turn));
        alone_other = post_chat(alone, chat_body(other));
        json second_turn = first_turn;
        second_turn.push_back(alone_first["choices"][0]["message"]);
        second_turn.push_back({{"role", "user"}, {"content", "And then?"}});
        alone_second = post_chat(alone, chat_body(second_turn));
        EXPECT_EQ(alone.stop(), 0);
    }

    std::vector<std::string> job_args = args;
    job_args.insert(job_args.end(), {"--parallel-mode", "tp"});
    ServerProcess job(kModel, job_args, {}, kTwoRanks, 1);
    // Two requests at once: decoded together in one batch of rank 0's scheduler.
    auto first = std::async(std::launch::async, [&] { return post_chat(job, chat_body(first_turn)); });
    auto second = std::async(std::launch::async, [&] { return post_chat(job, chat_body(other)); });
    const json job_first = first.get(), job_other = second.get();
    EXPECT_EQ(answer_of(job_first, false), answer_of(alone_first, false));
    EXPECT_EQ(answer_of(job_other, false), answer_of(alone_other, false));

    // The next turn resumes from the first turn's cached states, on every rank.
    json second_turn = first_turn;
    second_turn.push_back(job_first["choices"][0]["message"]);
    second_turn.push_back({{"role", "user"}, {"content", "And then?"}});
    const json job_second = post_chat(job, chat_body(second_turn));
    EXPECT_GT(job_second["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), 0) << job_second.dump();
    EXPECT_EQ(answer_of(job_second), answer_of(alone_second));
    // SIGTERM to rank 0: it shuts down and its last announcement ends rank 1 (mpirun itself,
    // signalled, would end every rank and exit 1 whatever they do).
    const pid_t rank_zero = rank_zero_of(job.pid());
    ASSERT_GT(rank_zero, 0);
    ASSERT_EQ(kill(rank_zero, SIGTERM), 0);
    EXPECT_EQ(job.wait_for_exit(), 0);
}

TEST(ParallelServe, SlotFilesAndTheDiskCacheAreRefused) {
    const CommandResult r = run_k3({"serve", "-m", kModel, "--slot-save-path", ".", "--parallel-mode", "tp"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("--slot-save-path: not with --parallel-mode tp"), std::string::npos) << r.err;
    const CommandResult disk = run_k3({"serve", "-m", kModel, "--cache-dir", ".", "--parallel-mode", "tp"});
    EXPECT_EQ(disk.exit_code, 2);
    EXPECT_NE(disk.err.find("--cache-dir: not with --parallel-mode tp"), std::string::npos) << disk.err;
}

// A follower killed while rank 0 serves: mpirun ends the job and names the rank.
TEST(ParallelServe, FollowerThatDiesEndsTheJobNamingIt) {
    ScratchDir dir;
    ServerProcess job(kModel, {"--parallel-mode", "tp"}, dir.file("stderr.txt"), kTwoRanks, 1);
    const pid_t rank_zero = rank_zero_of(job.pid());
    ASSERT_GT(rank_zero, 0);
    std::istringstream children(read_text("/proc/" + std::to_string(job.pid()) + "/task/" + std::to_string(job.pid()) + "/children"));
    pid_t follower = -1;
    for (pid_t child; children >> child;)
        if (child != rank_zero) follower = child;
    ASSERT_GT(follower, 0);
    ASSERT_EQ(kill(follower, SIGKILL), 0);
    EXPECT_NE(job.wait_for_exit(), 0);
    const std::string err = read_text(dir.file("stderr.txt"));
    EXPECT_NE(err.find("rank 1"), std::string::npos) << err;
}

// Piped input, one user message a line: rank 0 reads it and answers, rank 1 follows.
TEST(ParallelChat, TwoRanksAnswerPipedInputAsOneProcess) {
    const std::string input = "Hello there\nAnd then?\n";
    const std::vector<std::string> chat = {"chat", "-m", kModel, "--temp", "0", "-n", "10", "-t", "1", "-q", "--no-thinking"};
    std::vector<std::string> job_args(kTwoRanks.begin() + 1, kTwoRanks.end());
    job_args.push_back(K3_BINARY);
    job_args.insert(job_args.end(), chat.begin(), chat.end());
    job_args.insert(job_args.end(), {"--parallel-mode", "tp"});
    const CommandResult alone = run_k3(chat, input);
    const CommandResult job = run_program(K3_MPIEXEC, job_args, input);
    ASSERT_EQ(alone.exit_code, 0) << alone.err;
    ASSERT_EQ(job.exit_code, 0) << job.err;
    EXPECT_FALSE(alone.out.empty());
    EXPECT_EQ(job.out, alone.out);
}
#else
TEST(ParallelServe, NeedsMpi) {
    EXPECT_FALSE(parallel::mpi_available());
    GTEST_SKIP() << "k3 was built without MPI (install openmpi-bin libopenmpi-dev and reconfigure)";
}
#endif

}  // namespace
}  // namespace k3::testing
