#include "cli/commands.h"

int main(int argc, char** argv) { return k3::cli::run_main(argc, argv); }
