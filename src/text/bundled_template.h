// The Kimi-K3 chat template bundled with k3 (llama.cpp's models/templates/Kimi-K3.jinja, byte
// for byte), used when a checkpoint or model ships none. Embedded at build time (CMakeLists.txt).
#pragma once

#include <string_view>

namespace k3::text {

std::string_view bundled_kimi_k3_template();

}  // namespace k3::text
