#include "util/interruption.h"

#include <csignal>
#include <cstring>
#include <string>

namespace k3::util {
namespace {

volatile std::sig_atomic_t g_signal = 0;

extern "C" void record_signal(int signal) { g_signal = signal; }

}  // namespace

Interrupted::Interrupted(int signal)
    : Error(std::string("interrupted by ") + (signal == SIGINT ? "SIGINT" : signal == SIGTERM ? "SIGTERM" : strsignal(signal)) +
            "; no partial output was left"),
      signal_(signal) {}

void stop_on_signals() {
    struct sigaction action {};
    action.sa_handler = record_signal;
    action.sa_flags = SA_RESETHAND;  // the second signal takes the default action
    sigemptyset(&action.sa_mask);
    sigset_t signals;
    sigemptyset(&signals);
    for (int signal : {SIGINT, SIGTERM}) {
        sigaction(signal, &action, nullptr);
        sigaddset(&signals, signal);
    }
    sigprocmask(SIG_UNBLOCK, &signals, nullptr);
}

void throw_if_interrupted() {
    if (const int signal = g_signal) throw Interrupted(signal);
}

}  // namespace k3::util
