// The `k3` command: one function per subcommand, each parsing its own options.
#pragma once

namespace k3::cli {

// Dispatches argv[1] to a subcommand; returns the process exit code.
int run_main(int argc, char** argv);

// Each takes the arguments after the subcommand name (argv[0] is "k3 NAME").
int run_info(int argc, char** argv);
int run_run(int argc, char** argv);
int run_chat(int argc, char** argv);
int run_tokenize(int argc, char** argv);
int run_detokenize(int argc, char** argv);
int run_template(int argc, char** argv);
int run_eval(int argc, char** argv);
int run_bench(int argc, char** argv);
int run_serve(int argc, char** argv);
int run_convert(int argc, char** argv);
int run_quantize(int argc, char** argv);
int run_imatrix(int argc, char** argv);
int run_mock(int argc, char** argv);

}  // namespace k3::cli
