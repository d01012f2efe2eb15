// k3's error type: every failure that reaches a user names what is wrong and where.
#pragma once

#include <stdexcept>
#include <string>

namespace k3 {

// Thrown for bad input (a corrupt file, a wrong shape, malformed JSON) and failed I/O.
// The message is one line that names the file, key, tensor or offset concerned.
class Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

}  // namespace k3
