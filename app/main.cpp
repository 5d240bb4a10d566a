#include "commands/entry.hpp"

int main(int argc, char** argv) { return gangrun::main(argc, argv); }
