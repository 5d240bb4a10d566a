#include "store/protocol.hpp"

#include <array>

namespace gangrun::store {
namespace {

// Opcode tables, indexed by the byte. Both stop at the last byte they know.
constexpr std::array<Op, 13> k_legacy_ops = {
    Op::set,       Op::compare_set, Op::get,         Op::add,        Op::check,
    Op::wait,      Op::num_keys,    Op::watch_key,   Op::delete_key, Op::append,
    Op::multi_get, Op::multi_set,   Op::cancel_wait,
};

constexpr std::array<Op, 19> k_validated_ops = {
    Op::validate,  Op::set,       Op::compare_set, Op::get,        Op::add,
    Op::check,     Op::wait,      Op::num_keys,    Op::delete_key, Op::append,
    Op::multi_get, Op::multi_set, Op::cancel_wait, Op::ping,       Op::queue_push,
    Op::queue_pop, Op::queue_len, Op::list_keys,   Op::barrier,
};

template <std::size_t N>
std::optional<std::uint8_t> find_byte(const std::array<Op, N>& table, Op op) {
  for (std::size_t i = 0; i < N; ++i) {
    if (table[i] == op) return static_cast<std::uint8_t>(i);
  }
  return std::nullopt;
}

}  // namespace

std::optional<Op> op_from_byte(Dialect dialect, std::uint8_t byte) {
  if (dialect == Dialect::validated) {
    if (byte < k_validated_ops.size()) return k_validated_ops[byte];
    return std::nullopt;
  }
  if (byte < k_legacy_ops.size()) return k_legacy_ops[byte];
  return std::nullopt;
}

std::optional<std::uint8_t> byte_for_op(Dialect dialect, Op op) {
  if (dialect == Dialect::validated) return find_byte(k_validated_ops, op);
  return find_byte(k_legacy_ops, op);
}

std::string_view op_name(Op op) {
  switch (op) {
    case Op::validate:
      return "VALIDATE";
    case Op::set:
      return "SET";
    case Op::compare_set:
      return "COMPARE_SET";
    case Op::get:
      return "GET";
    case Op::add:
      return "ADD";
    case Op::check:
      return "CHECK";
    case Op::wait:
      return "WAIT";
    case Op::num_keys:
      return "GETNUMKEYS";
    case Op::watch_key:
      return "WATCH_KEY";
    case Op::delete_key:
      return "DELETE_KEY";
    case Op::append:
      return "APPEND";
    case Op::multi_get:
      return "MULTI_GET";
    case Op::multi_set:
      return "MULTI_SET";
    case Op::cancel_wait:
      return "CANCEL_WAIT";
    case Op::ping:
      return "PING";
    case Op::queue_push:
      return "QUEUE_PUSH";
    case Op::queue_pop:
      return "QUEUE_POP";
    case Op::queue_len:
      return "QUEUE_LEN";
    case Op::list_keys:
      return "LIST_KEYS";
    case Op::barrier:
      return "BARRIER";
  }
  return "?";
}

}  // namespace gangrun::store
