// The chat page `k3 serve` answers at GET / (src/server/chat_page.html, embedded byte for byte
// at configure time by CMake's k3_embed_file).
#pragma once

#include <string_view>

namespace k3::server {

std::string_view chat_page_html();

}  // namespace k3::server
