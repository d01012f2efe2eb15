// SIGINT/SIGTERM as an orderly stop for commands that write files: the handler only records
// the signal, and long loops call throw_if_interrupted() at safe points, so the exception
// unwinds through the destructors that remove partial output. A second signal kills at once.
#pragma once

#include "util/error.h"

namespace k3::util {

class Interrupted : public Error {
public:
    explicit Interrupted(int signal);
    int signal() const { return signal_; }
    int exit_code() const { return 128 + signal_; }  // what a shell reports for death by the signal

private:
    int signal_;
};

// Installs the recording handler for SIGINT and SIGTERM (and unblocks them).
void stop_on_signals();

// Throws Interrupted once one of those signals has arrived; does nothing otherwise.
void throw_if_interrupted();

}  // namespace k3::util
