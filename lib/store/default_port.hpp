// The store's port when nobody names one: PyTorch's (torchrun's
// --master_port, TCPStore's examples, accelerate's --main_process_port).
// Every default of gangrun's that means "the store's usual port" is this one
// constant: a multi-node plan's master port, `gangrun store`'s endpoint and
// `serve` port, the client's settings, and the texts of --help and gangrun(1),
// which are built from it (tests/integration/test_one_owner.py keeps the
// number itself out of every other file).
#pragma once

namespace gangrun::store {

inline constexpr int k_default_port = 29500;

}  // namespace gangrun::store
