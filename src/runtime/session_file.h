// A session's state on disk: the prompt cache's disk tier (--cache-dir), the server's slot
// files (--slot-save-path) and `k3 run --prompt-cache`. A file names the model it was computed
// by (model_identity: a hash of every part's metadata and tensor table) and ends with a checksum,
// so a foreign, truncated or corrupt file is refused before any of it reaches a session.
//
//   layout: "K3SESSN1", u64 model identity, u64 n_tokens, i32 tokens[n_tokens], u64 n_layers,
//           per layer u8 kind (0 none, 1 KDA, 2 MLA) and its arrays (u64 count, f32 values),
//           u64 FNV-1a checksum of everything before it. Native (little-endian) byte order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/session.h"
#include "runtime/session_state.h"

namespace k3::gguf { class GgufFile; }

namespace k3::runtime {

// FNV-1a 64 of the bytes before the first tensor's data in every part: metadata and tensor table.
uint64_t model_identity(const gguf::GgufFile& file);

// Writes atomically (a temporary name in the same folder, fsync, rename). Returns bytes written.
// Throws k3::Error naming the file on an I/O failure.
uint64_t write_session_file(const std::string& path, const SessionState& state, uint64_t identity);

// The ids a session file holds, from its header; k3::Error naming the file and what is wrong
// (not a session file, another model's, truncated).
std::vector<int32_t> read_session_file_tokens(const std::string& path, uint64_t identity);

// The whole state, checked against the checksum and the engine's layer shapes; k3::Error as above.
SessionState read_session_file(const std::string& path, const Engine& engine, uint64_t identity);

}  // namespace k3::runtime
