// `k3 convert`: a Hugging Face K3 checkpoint -> GGUF, as llama.cpp's converter writes it
// (metadata of k3-architecture.md §1, tensors of §2 with the transforms of §2/§9, the tiktoken
// vocabulary of §10 and a chat template). Tensors are written as they are produced; memory is
// bounded by the largest tensor.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace k3::convert {

struct ConvertOptions {
    std::string checkpoint_dir;
    std::string output_path;
    std::string outtype = "auto";     // auto | f32 | f16 | bf16 | q8_0
    uint64_t split_max_bytes = 0;     // 0: one file
    bool dry_run = false;             // print the hyper-parameters and tensor map, write nothing
    std::string chat_template_path;   // used when the checkpoint ships no template
    bool overwrite = true;            // false: an existing output is an error (before anything is written)
};

// Converts (or, for a dry run, prints the plan to `report`). Progress goes to `progress`
// (may be null). Returns the files written. Throws k3::Error before writing anything when the
// checkpoint is incomplete or inconsistent.
std::vector<std::string> convert_checkpoint(const ConvertOptions& options, std::FILE* report, std::FILE* progress);

}  // namespace k3::convert
